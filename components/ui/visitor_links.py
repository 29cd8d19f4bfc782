"""A visitor's key in their session, and the one-time links that bring it to another.

The key (signed by the server, models/serving/visitor_keys.py) lives only in the session. A link
the training page gives carries `?visitor=<token>`: the first session that opens it gets the
key, and the token is used up, so the link left in a browser's history, or passed on, opens
nothing. Any lesson reads the parameter, so a link to the attention, recurrent, masks or
positional lesson brings the models back as well. The parameter is taken out of the address
bar once read.
"""

from __future__ import annotations

import streamlit as st

from components.i18n import t

VISITOR_PARAM = "visitor"
VISITOR_KEY = "visitor_id"
VISITOR_FROM_LINK = "_visitor_from_link"  # the key came from a link, not made here
HANDED_LINK = "_visitor_link_token"  # the one link this session has handed out


def visitor_id() -> str:
    """This visitor's key to their trained models: the one a link brought, or a new one.
    A link that brings none (used already, expired, made up) is refused with a note."""
    from components.ui.runs.shared import load_visitor_store
    from models.serving.visitor_keys import LinkRefused

    store = load_visitor_store()
    raws = st.query_params.get_all(VISITOR_PARAM)
    if raws:
        del st.query_params[VISITOR_PARAM]
        try:
            key = store.redeem_link(raws[-1])
        except LinkRefused as refused:
            st.warning(t(f"training.link.{refused.reason}", hours=store.max_age / 3600), icon="⚠️")
        else:
            st.session_state[VISITOR_KEY] = key
            st.session_state[VISITOR_FROM_LINK] = True
            st.session_state.pop(HANDED_LINK, None)
    key = st.session_state.get(VISITOR_KEY)
    if not store.keys.check(key):
        key = st.session_state[VISITOR_KEY] = store.new_key()
    return key


def visitor_link(page: str) -> str | None:
    """A one-time link to `page` that brings this visitor's models back (absolute when the
    browser told us the address it uses), or None when the store cannot keep one. The
    session keeps handing out the same link until it is used or expires; then a new one."""
    from urllib.parse import urlencode

    from components.i18n import DEFAULT_LANGUAGE, current_language
    from components.ui.runs.shared import load_visitor_store
    from models.serving.visitor_store import StoreRefused

    store = load_visitor_store()
    token = st.session_state.get(HANDED_LINK)
    if not store.link_is_live(token):
        try:
            token = st.session_state[HANDED_LINK] = store.mint_link(visitor_id())
        except StoreRefused:
            return None  # the store's problem is on the page already, and in the log
    query = {VISITOR_PARAM: token}
    if current_language() != DEFAULT_LANGUAGE:
        query["lang"] = current_language()
    base = st.context.url
    return f"{base or '/' + page}?{urlencode(query)}"


def store_refusal_shown(show) -> bool:
    """Why the store cannot save models now, shown with `show` (st.warning, st.error) in the
    visitor's language; False when it can."""
    from components.ui.runs.shared import load_visitor_store

    refused = load_visitor_store().refusal()
    if refused is not None:
        show(t(f"training.store.{refused.reason}", **refused.params))
    return refused is not None
