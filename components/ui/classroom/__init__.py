"""Class mode on screen: a teacher's room, students following it, the room's question."""
