"""A class's room shared between the teacher's screen and the students': pure Python, no
Streamlit (components/ui/classroom/ draws it)."""
