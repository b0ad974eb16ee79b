"""The diagnostics cache holds what each prompt's last publish used, and nothing of older versions."""

from __future__ import annotations

from pathlib import Path

from spade_lsp_server.features import diagnostics
from spade_lsp_server.features.diagnostics import _Cache


def test_each_prompt_keeps_only_what_its_last_publish_used_with_its_json() -> None:
    cache = _Cache(prompts=2)
    old, same, new = {"message": "old"}, {"message": "same"}, {"message": "new"}
    cache.keep(Path("a.prompt"), {("old",): old, ("same",): same})
    cache.keep(Path("a.prompt"), {("same",): same, ("new",): new})  # the next publish of the same prompt
    assert cache.last_used(Path("a.prompt")) == {("same",): same, ("new",): new}
    assert id(old) not in cache.json and cache.json[id(same)] == '{"message": "same"}'
    other, third = {"message": "b"}, {"message": "c"}
    cache.keep(Path("b.prompt"), {("b",): other})
    cache.keep(None, {("c",): third})  # a third prompt: the one published longest ago leaves, JSON and all
    assert cache.last_used(Path("a.prompt")) == {} and id(same) not in cache.json and id(new) not in cache.json
    assert len(cache.json) == 2


def test_encoding_reuses_the_cached_text() -> None:
    cache = _Cache()
    item = {"message": "as published"}
    cache.keep(Path("a.prompt"), {("k",): item})
    item["message"] = "changed since"  # the cached text is what goes out: the item was not encoded again
    original, diagnostics._CACHE = diagnostics._CACHE, cache
    try:
        assert diagnostics.encode([item, {"message": "fresh"}]) == '[{"message": "as published"},{"message": "fresh"}]'
    finally:
        diagnostics._CACHE = original
