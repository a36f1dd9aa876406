"""Text edits of patchset.yaml: the user's file keeps everything but the edited entry, and the
result loads as a patchset."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO, dedent
from patchbay.errors import InputError
from patchbay.patchset.loading import load_patchset
from patchbay.patchset.text import append_patch, remove_patch, set_scalar

HEAD = dedent(
    """
    schema: 1   # format version
    name: t
    image: {reference: example.invalid/x:1}
    targets:
      engine: {package: demo_engine}
    """
)
ENTRY = {
    "id": "new",
    "kind": "replace",
    "target": "engine",
    "description": "<TODO: what this patch does and why>",
    "upstream_status": {"status": "Pending", "reason": "<TODO: why>"},
    "edits": [{"file": "demo_engine/x.py", "old": "a\n", "new": "b\n"}],
}


def _loads(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "patchset.yaml"
    path.write_text(text)
    return [p.id for p in load_patchset(path).patches]


@pytest.mark.parametrize(
    "tail",
    ["", "patches:\n", "patches: []   # none yet\n", "patches:\n# a comment\n"],
    ids=["no-key", "empty-key", "flow-empty", "comment-only"],
)
def test_append_to_a_patchset_without_patches(tmp_path: Path, tail: str) -> None:
    text = append_patch(HEAD + tail, ENTRY, path=tmp_path / "p.yaml")
    assert text.startswith(HEAD)
    assert _loads(tmp_path, text) == ["new"]


def test_append_and_remove_keep_the_demo_patchset_byte_for_byte(tmp_path: Path) -> None:
    original = (REPO / "patchsets" / "demo" / "patchset.yaml").read_text()
    grown = append_patch(original, ENTRY, path=tmp_path / "p.yaml")
    assert grown.startswith(original)
    (tmp_path / "patches").mkdir()
    ids = _loads(tmp_path, grown)
    assert ids[-1] == "new" and len(ids) == 6
    assert remove_patch(grown, 5, path=tmp_path / "p.yaml") == original
    # a patch in the middle: only its own lines go, the next one keeps its comment
    lines = original.splitlines(True)
    cut = remove_patch(original, 1, path=tmp_path / "p.yaml")
    assert len(cut.splitlines()) == len(lines) - 7
    assert "scheduler-padding" not in cut and "mla-large-cache" in cut
    assert "    package: demo_engine            # root = the folder" in cut


def test_remove_the_only_patch_leaves_an_empty_list(tmp_path: Path) -> None:
    one = append_patch(HEAD, ENTRY, path=tmp_path / "p.yaml")
    assert _loads(tmp_path, remove_patch(one, 0, path=tmp_path / "p.yaml")) == []
    with pytest.raises(InputError, match="no patch number 2"):
        remove_patch(one, 1, path=tmp_path / "p.yaml")


def test_set_scalar_replaces_one_value(tmp_path: Path) -> None:
    original = (REPO / "patchsets" / "demo" / "patchset.yaml").read_text()
    text = set_scalar(original, ("base", "distributions", "demo-engine"), "==0.5.0", path=tmp_path)
    assert text == original.replace('"==0.4.1+g1a2b3c4"', '"==0.5.0"')
    with pytest.raises(InputError, match=r"base\.nothing is not a value"):
        set_scalar(original, ("base", "nothing"), "x", path=tmp_path)
