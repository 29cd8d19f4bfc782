"""The server's class rooms, made once: in this process (components/classroom/rooms.py), or
in the Redis server SEQLENS_ROOMS_REDIS names (redis://host:6379/0), which several servers
then share (components/classroom/redis_rooms.py)."""

from __future__ import annotations

import os

import streamlit as st

from components.classroom.rooms import MemoryRooms, Rooms

REDIS_ENV = "SEQLENS_ROOMS_REDIS"


@st.cache_resource(show_spinner=False)
def rooms() -> Rooms:
    url = os.environ.get(REDIS_ENV, "").strip()
    if not url:
        return MemoryRooms()
    from components.classroom.redis_rooms import RedisRooms

    return RedisRooms(url)
