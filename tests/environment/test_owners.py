"""Which distribution owns a patched file (its RECORD, or its package folder's), and when a
record of it went stale: another version, another build of the same version, uninstalled."""

from __future__ import annotations

import shutil
from pathlib import Path

from patchbay.apply.ledger import FileRecord, LedgerEntry
from patchbay.environment.owners import Owners, replaced_since
from patchbay.patchset.model import Target


def _install(site: Path, name: str, version: str, files: dict[str, str]) -> None:
    """A distribution as a wheel installer leaves it: its files and a dist-info with METADATA
    and a RECORD listing them."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
    rows = []
    for rel, text in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
        rows.append(f"{rel},,")
    rows.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(rows) + "\n")


def _uninstall(site: Path, name: str) -> None:
    for folder in site.glob(f"{name}-*.dist-info"):
        shutil.rmtree(folder)


def _owners(site: Path) -> Owners:
    targets = {"pkg": Target(package="pkg"), "meta": Target(package="pkg", path="pkg_meta")}
    return Owners({"pkg": site, "meta": site / "pkg_meta"}, targets)


def _entry(owners: Owners, pid: str, *files: tuple[str, str]) -> LedgerEntry:
    records = [FileRecord(t, p, None, "x") for t, p in files]
    return LedgerEntry(
        pid, "diff", "s", "t", "v", records, distributions=owners.written_against(records)
    )


def test_the_owner_is_the_record_that_lists_the_file_or_its_package(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _install(site, "pkg-dist", "1.0", {"pkg/a.py": "a", "pkg_meta/t.csv": "t"})
    _install(site, "other", "2.0", {"other/b.py": "b"})
    owners = _owners(site)
    assert owners.owner("pkg", "pkg/a.py").name == "pkg-dist"
    assert owners.owner("meta", "t.csv").name == "pkg-dist"  # below the target's path
    assert owners.owner("pkg", "pkg/new.py").name == "pkg-dist"  # added into its package
    assert owners.owner("pkg", "other/b.py").version == "2.0"
    assert owners.owner("pkg", "loose.py") is None


def test_records_go_stale_on_another_version_another_build_or_an_uninstall(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    _install(site, "pkg-dist", "1.0", {"pkg/a.py": "a"})
    _install(site, "other", "2.0", {"other/b.py": "b"})
    owners = _owners(site)
    first = _entry(owners, "p1", ("pkg", "pkg/a.py"))
    second = _entry(owners, "p2", ("pkg", "other/b.py"))
    assert replaced_since([first, second], _owners(site)) == []

    record = next(site.glob("pkg_dist-*.dist-info")) / "RECORD"
    record.write_text(record.read_text() + "pkg/c.py,,\n")  # rebuilt, same version
    (rep,) = replaced_since([first, second], _owners(site))
    assert (rep.name, rep.same_version, rep.patch_ids) == ("pkg-dist", True, ["p1"])
    assert "pkg-dist 1.0 was installed again (another RECORD) over 1 patch (p1)" in rep.sentence()

    _uninstall(site, "pkg_dist")
    _install(site, "pkg-dist", "1.1", {"pkg/a.py": "a2"})
    (rep,) = replaced_since([first, second], _owners(site))
    assert rep.sentence().startswith("pkg-dist 1.0 → 1.1 was installed over 1 patch (p1): its")

    _uninstall(site, "other")
    assert [r.sentence().split(":")[0] for r in replaced_since([second], _owners(site))] == [
        "other 2.0 was uninstalled under 1 patch (p2)"
    ]


def test_an_entry_an_older_patchbay_wrote_is_never_stale(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _install(site, "pkg-dist", "1.0", {"pkg/a.py": "a"})
    old = LedgerEntry("p", "diff", "s", "t", "v", [FileRecord("pkg", "pkg/a.py", None, "x")])
    assert LedgerEntry.from_json(old.to_json()).distributions == {}
    assert replaced_since([old], _owners(tmp_path / "elsewhere")) == []
