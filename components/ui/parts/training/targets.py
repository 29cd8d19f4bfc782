"""The targets the shipped models are trained to meet, and the command that trains them
again (folded away under the accuracy against lag)."""

from __future__ import annotations

import streamlit as st

from components.i18n import t
from models.training.train import TARGETS


def draw() -> None:
    targets = [
        t(
            "training.target",
            task=t(f"training.task.{target.task}"),
            model=t(f"training.model.{target.kind}"),
            metric=t(f"training.metric.{target.metric}"),
            sign="≤" if target.metric == "mse" else "≥",
            threshold=target.threshold,
        )
        for target in TARGETS
    ]
    with st.expander(t("training.targets.title")):
        st.text("\n".join(targets))
        st.caption(t("training.targets.command"))
        st.code("python -m models.training.train --all", language="bash")
