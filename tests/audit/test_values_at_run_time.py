"""Values the static reading must not invent, found by observing real runs (issue 22): a
``$(a | b)`` is the last stage's output, and ``pathlib.Path(a, b, c)`` joins its parts."""

from __future__ import annotations

from patchbay.analysis import analyse_shell

SITE = "SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')\n"


def _targets(text: str) -> list[str]:
    analysis = analyse_shell(text, "t.sh")
    return [m.target.path for m in analysis.modifications if m.target is not None]


def test_a_piped_substitution_is_the_last_stages_output_not_the_first() -> None:
    text = SITE + 'NAME=$(echo d29ya2VyLnB5 | base64 -d)\nsed -i s/a/b/ "$SITE/vllm/$NAME"\n'
    # known only at run time: kept as written, never the text `echo` printed into the pipe
    assert _targets(text) == ["/@site/vllm/$(echo d29ya2VyLnB5 | base64 -d)"]


def test_a_pipe_through_cat_passes_the_value_on() -> None:
    text = SITE + 'NAME=$(printf envs.py | cat)\nsed -i s/a/b/ "$SITE/vllm/$NAME"\n'
    assert _targets(text) == ["/@site/vllm/envs.py"]


def test_a_path_of_several_parts_is_joined() -> None:
    text = SITE + (
        "python3 - \"$SITE\" <<'PY'\n"
        "import pathlib, sys\n"
        'p = pathlib.Path(sys.argv[1], "vllm", "envs.py")\n'
        'p.write_text(p.read_text().replace("a", "b"))\n'
        "PY\n"
    )
    assert _targets(text) == ["/@site/vllm/envs.py"]
