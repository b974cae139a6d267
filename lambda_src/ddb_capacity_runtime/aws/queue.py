"""Runs in: scaler Lambda (the sharded tick's batches), fleet advisor Lambda (its list step).

What a SendMessageBatch answer says was sent, and why not, read as untrusted input."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def unsent(answer: object, ids: Iterable[str]) -> list[str]:
    """The entry ids among ``ids`` that SendMessageBatch's ``answer`` does not list as sent
    (``Successful``): an entry it leaves out, or an answer without the list, is not taken
    for sent."""
    listed = answer.get("Successful") if isinstance(answer, Mapping) else None
    entries = listed if isinstance(listed, list) else []
    sent = {e.get("Id") for e in entries if isinstance(e, Mapping)}
    return [i for i in ids if i not in sent]


def why_unsent(answer: object, ids: Iterable[str]) -> dict[str, str | None]:
    """Each of `unsent`'s ids, and the ``Code: Message`` the answer's ``Failed`` list gives
    it; None for an entry it lists nowhere."""
    listed = answer.get("Failed") if isinstance(answer, Mapping) else None
    said = {
        f.get("Id"): f"{f.get('Code')}: {f.get('Message')}"
        for f in (listed if isinstance(listed, list) else [])
        if isinstance(f, Mapping)
    }
    return {i: said.get(i) for i in unsent(answer, ids)}
