"""SeqLens: the entry point. The frame (shared controls, navigation) runs one lesson."""

from components.ui.frame import run_app

run_app()
