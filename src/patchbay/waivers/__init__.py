"""Waiver documents: why a patch may be carried on top of a pinned image, and until when.

A waiver is a Markdown file (``waivers/<id>.md``). Its YAML front matter holds the machine
fields (``id``, the ``patches`` it covers, ``owner``, ``filed``, ``review_by`` or ``expires``,
``status`` and, once approved, the ``approval`` link); its body holds the four fields reviewers
require: what is patched, why the unmodified image cannot run the benchmark, the upstream PR or
issue that removes the need, and the removal plan.

Teams already have many waivers without front matter. The same parser reads those: it finds the
four fields under heading variants and synonyms ("Scope", "Upstream tracking", "Removal and
approval criteria"), in labelled list items (``- **Why:** ...``) and in table columns, and finds
upstream references in any form: Markdown links, bare URLs, ``owner/repo#N``, commit URLs,
``owner/repo@<commit>`` and ``project #N`` in text (resolved through a name-to-repository map).
Each field is reported as found (with its line), missing, or holding a placeholder (``<...>``,
``TODO``, ``TBD``, or "pending" standing where a reference should be).

The status words of the front matter (``requested``, ``approved``) are the review states of the
benchmark repositories' waiver process; the four body fields are their review checklist.

One module per concern:

- :mod:`.document` — :class:`Waiver`, :func:`parse_waiver`, :func:`read_waivers`;
- :mod:`.files` — which files of a folder are waivers (not documentation, not translations);
- :mod:`.frontmatter` — the YAML front matter (:class:`FrontMatter`);
- :mod:`.body` — the Markdown body: where the four fields are, in every layout;
- :mod:`.segments` — the body's text segments (a line or a table cell and its fields);
- :mod:`.plain` — the fast path for plain Markdown (what ``waiver new`` writes);
- :mod:`.fields` — the four fields, the labels that name them, what was found for each;
- :mod:`patchbay.patchset.placeholders` — blanks left to fill (outside this package:
  `validate` and the audit configuration ask it without loading the waiver parser);
- :mod:`.references` — upstream references in any form;
- :mod:`.paths` — file paths the text names (the patch script a legacy waiver covers);
- :mod:`.template` — the text ``patchbay waiver new`` writes.

It imports only the document wing (:mod:`patchbay.patchset`: YAML with line numbers,
validation, placeholders) and the shared top-level modules.
"""

from ..patchset.placeholders import placeholder_in
from .document import Waiver, parse_waiver, read_waiver_text, read_waivers
from .fields import (
    FIELD_TITLES,
    FIELDS,
    FieldName,
    FieldResult,
    FieldStatus,
    Placeholder,
    field_matches,
)
from .files import Translation, WaiverFiles, waiver_files
from .frontmatter import FrontMatter, split_front_matter
from .paths import NamedPath
from .references import Reference
from .template import PatchSummary, waiver_template

__all__ = [
    "FIELDS",
    "FIELD_TITLES",
    "FieldName",
    "FieldResult",
    "FieldStatus",
    "FrontMatter",
    "NamedPath",
    "PatchSummary",
    "Placeholder",
    "Reference",
    "Translation",
    "Waiver",
    "WaiverFiles",
    "field_matches",
    "parse_waiver",
    "placeholder_in",
    "read_waiver_text",
    "read_waivers",
    "split_front_matter",
    "waiver_files",
    "waiver_template",
]
