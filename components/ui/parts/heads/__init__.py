"""The attention lesson's parts (pages/heads.py): the model picker, the overview drawn on
every run (all heads, one head, one token), then one tabbed part at a time: statistics,
ablation, rollout."""
