"""The parts of each lesson: one idea each, with its controls, its cached run and its charts."""
