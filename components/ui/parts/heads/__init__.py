"""The attention lesson's parts (pages/heads.py): the model picker, the overview drawn on
every run (all heads, one head, one token), then one tabbed part at a time: statistics,
ablation, rollout."""

from components.i18n import t


def part_label(name: str) -> str:
    """A tabbed part's name as its tab shows it (and a link may carry it)."""
    return t(f"heads.view.{name}")
