"""A GitHub stand-in for the tests and the report benchmark.

A real HTTP server on 127.0.0.1 that answers the REST and GraphQL requests of
:mod:`patchbay.upstream.queries` with GitHub's field names and headers, from real git
repositories built by the caller: commits, ancestry (``compare``) and messages come from
``git``; pull requests and issues are declared (number, title, state, merge commit).

Headers as GitHub sends them: ``ETag`` on every JSON answer and ``304 Not Modified`` for a
matching ``If-None-Match``; ``x-ratelimit-limit/-remaining/-reset/-used/-resource`` (a 304 does
not use the limit). Faults are queued per path prefix: a status (500, a 403 rate limit with its
headers), or a delay longer than the client's timeout. Every request is logged with its status.

Contents: ``GET /repos/{o}/{r}/contents/{path}?ref=SHA`` answers a file of the real repository
at that commit (base64, as GitHub does), 404 for a path that is no file there.

GraphQL: the server reads the aliased ``repository(owner: $oN, name: $nN) { iN_K:
issueOrPullRequest(number: X) ... }`` queries patchbay sends (it is not a general GraphQL
engine) and answers with GraphQL field names (``isDraft``, ``mergeCommit { oid }``,
``timelineItems`` of ``ClosedEvent`` with its ``closer``), with ``NOT_FOUND`` errors and null
fields as GitHub does.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass
class Pull:
    """A pull request as the stand-in serves it."""

    number: int
    title: str
    state: str = "open"
    draft: bool = False
    merged: bool = False
    merge_commit_sha: str | None = None
    merged_at: str | None = None
    closed_at: str | None = None
    base: str = "main"


@dataclass
class Issue:
    """An issue; ``closed_by_pull`` (GraphQL closer) or ``closed_by_commit`` (REST event)."""

    number: int
    title: str
    state: str = "open"
    state_reason: str | None = None
    closed_at: str | None = None
    closed_by_pull: int | None = None
    closed_by_commit: str | None = None
    body: str = ""


@dataclass
class Repo:
    """A repository served from a real git repository ``git_dir``."""

    name: str
    git_dir: str
    default_branch: str = "main"
    pulls: dict[int, Pull] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)

    def next_number(self) -> int:
        return max([0, *self.pulls, *self.issues]) + 1


@dataclass
class Fault:
    """An answer to put in place of the normal one: ``status`` (with ``headers`` and a
    ``message``), or ``delay`` seconds before the normal answer (``status`` None)."""

    status: int | None = 500
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "Server Error"
    delay: float = 0.0


@dataclass
class Logged:
    method: str
    path: str
    status: int
    headers: dict[str, str]


class _Git:
    """The git queries the stand-in needs, memoised by commit id (history does not change
    under a commit id; branch names are resolved on every request)."""

    def __init__(self, git_dir: str) -> None:
        self.dir = git_dir
        self._memo: dict[tuple[str, ...], Any] = {}
        self._lock = threading.Lock()

    def _run(self, *args: str) -> str:
        proc = subprocess.run(
            ["git", "-C", self.dir, *args], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise LookupError(proc.stderr.strip())
        return proc.stdout

    def resolve(self, ref: str) -> str | None:
        if not re.fullmatch(r"[\w./-]+", ref):
            return None
        try:
            return self._run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
        except LookupError:
            return None

    def _memoised(self, key: tuple[str, ...], fn: Any) -> Any:
        with self._lock:
            if key in self._memo:
                return self._memo[key]
        value = fn()
        with self._lock:
            self._memo[key] = value
        return value

    _FORMAT = "--format=%H%x00%P%x00%an%x00%ae%x00%aI%x00%cI%x00%B%x1e"

    @staticmethod
    def _parse(record: str) -> dict[str, Any]:
        full, parents, name, email, adate, cdate, message = record.strip("\n").split("\x00", 6)
        return {
            "sha": full,
            "parents": parents.split(),
            "name": name,
            "email": email,
            "adate": adate,
            "cdate": cdate,
            "message": message.rstrip("\n"),
        }

    def commit(self, sha: str) -> dict[str, Any]:
        return self._memoised(
            ("commit", sha),
            lambda: self._parse(self._run("show", "-s", self._FORMAT, sha).rstrip("\n\x1e")),
        )

    def range(self, base: str, head: str) -> list[str]:
        """``git log base..head``, oldest first (one ``git log`` also fills the commit memo)."""

        def load() -> list[str]:
            out = self._run("log", "--reverse", self._FORMAT, f"{base}..{head}")
            shas = []
            for record in out.split("\x1e"):
                if record.strip():
                    c = self._parse(record)
                    shas.append(c["sha"])
                    with self._lock:
                        self._memo[("commit", c["sha"])] = c
            return shas

        return self._memoised(("range", base, head), load)

    def merge_base(self, a: str, b: str) -> str | None:
        def load() -> str | None:
            try:
                return self._run("merge-base", a, b).strip() or None
            except LookupError:
                return None

        return self._memoised(("merge-base", a, b), load)


def _utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


class GitHubStandIn:
    """The server; use as a context manager. ``url`` is the API base to give the client.

    Args:
        latency: seconds added to every request (the benchmark's 50 ms).
        token: when set, GraphQL and writes need ``Authorization: Bearer <token>``, and REST
            requests with any other token are answered 401.
    """

    def __init__(self, *, latency: float = 0.0, token: str | None = None) -> None:
        self.latency = latency
        self.token = token
        self.repos: dict[str, Repo] = {}
        self.faults: list[tuple[str, str | None, list[Fault]]] = []
        self.log: list[Logged] = []
        self.limit = 5000
        self.used = 0
        self._git: dict[str, _Git] = {}
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body leave in one segment: no Nagle / delayed-ACK stall per answer
            disable_nagle_algorithm = True
            wbufsize = 1 << 16

            def do_GET(self) -> None:
                server._handle(self, "GET")

            def do_POST(self) -> None:
                server._handle(self, "POST")

            def do_PATCH(self) -> None:
                server._handle(self, "PATCH")

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> GitHubStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- set-up ---------------------------------------------------------------------------------

    def add_repo(self, name: str, git_dir: str, default_branch: str = "main") -> Repo:
        repo = Repo(name, str(git_dir), default_branch)
        self.repos[name.lower()] = repo
        self._git[name.lower()] = _Git(str(git_dir))
        return repo

    def fail(self, prefix: str, *faults: Fault, method: str | None = None) -> None:
        """Answer the next requests whose path starts with ``prefix`` with ``faults``, in order."""
        with self._lock:
            self.faults.append((prefix, method, list(faults)))

    def clear_log(self) -> None:
        with self._lock:
            self.log.clear()

    def count(self, method: str | None = None, prefix: str = "") -> int:
        return sum(
            1
            for e in self.log
            if (method is None or e.method == method) and e.path.startswith(prefix)
        )

    # -- dispatch -------------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        if self.latency:
            time.sleep(self.latency)
        parts = urlsplit(h.path)
        path = unquote(parts.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in h.headers.items()}
        fault = self._take_fault(path, method)
        status, payload, extra = 500, {"message": "stand-in error"}, {}
        try:
            if fault is not None and fault.delay:
                time.sleep(fault.delay)
            if fault is not None and fault.status is not None:
                status, payload, extra = fault.status, {"message": fault.message}, fault.headers
            elif not self._authorised(headers, method, path):
                status, payload = 401, {"message": "Bad credentials"}
            elif method == "POST" and path == "/graphql":
                status, payload = 200, self._graphql(json.loads(raw or b"{}"))
            else:
                body = json.loads(raw) if raw else None
                status, payload = self._rest(method, path, query, body)
        except Exception as exc:  # a bug in the stand-in must show up, not hang the client
            status, payload = 500, {"message": f"stand-in failure: {exc!r}"}
        self._answer(h, method, h.path, headers, status, payload, extra)

    def _take_fault(self, path: str, method: str) -> Fault | None:
        with self._lock:
            for entry in self.faults:
                prefix, only, queue = entry
                if queue and path.startswith(prefix) and (only is None or only == method):
                    fault = queue.pop(0)
                    if not queue:
                        self.faults.remove(entry)
                    return fault
        return None

    def _authorised(self, headers: dict[str, str], method: str, path: str) -> bool:
        given = headers.get("authorization")
        if self.token is None:
            return True
        expected = {f"Bearer {self.token}", f"token {self.token}"}
        if given is not None:
            return given in expected
        return method == "GET" and path != "/graphql"

    def _answer(
        self,
        h: BaseHTTPRequestHandler,
        method: str,
        full_path: str,
        headers: dict[str, str],
        status: int,
        payload: Any,
        extra: dict[str, str],
    ) -> None:
        body = json.dumps(payload, sort_keys=True).encode()
        etag = 'W/"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        if method == "GET" and status == 200 and headers.get("if-none-match") == etag:
            status, body = 304, b""
        with self._lock:
            if status != 304:
                self.used += 1
            remaining = max(0, self.limit - self.used)
            self.log.append(Logged(method, full_path, status, headers))
        out = {
            "Content-Type": "application/json; charset=utf-8",
            "x-ratelimit-limit": str(self.limit),
            "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-reset": str(int(time.time()) + 3600),
            "x-ratelimit-used": str(self.used),
            "x-ratelimit-resource": "graphql" if full_path.startswith("/graphql") else "core",
        }
        if method == "GET" and status in (200, 304):
            out["ETag"] = etag
        out.update(extra)
        try:
            h.send_response(status)
            for key, value in out.items():
                h.send_header(key, value)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            if body:
                h.wfile.write(body)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test)

    # -- REST -----------------------------------------------------------------------------------

    def _rest(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        m = re.match(r"^/repos/([^/]+/[^/]+)(/.*)?$", path)
        if not m:
            return 404, {"message": "Not Found"}
        repo = self.repos.get(m.group(1).lower())
        if repo is None:
            return 404, {"message": "Not Found"}
        git = self._git[repo.name.lower()]
        rest = m.group(2) or ""
        if rest == "" and method == "GET":
            return 200, {
                "full_name": repo.name,
                "default_branch": repo.default_branch,
                "html_url": f"https://github.com/{repo.name}",
            }
        if m2 := re.fullmatch(r"/pulls/(\d+)", rest):
            pull = repo.pulls.get(int(m2.group(1)))
            return (200, self._pull_json(repo, pull)) if pull else (404, {"message": "Not Found"})
        if m2 := re.fullmatch(r"/issues/(\d+)", rest):
            return self._issue_rest(repo, int(m2.group(1)), method, body)
        if m2 := re.fullmatch(r"/issues/(\d+)/events", rest):
            issue = repo.issues.get(int(m2.group(1)))
            if issue is None:
                return 404, {"message": "Not Found"}
            return 200, self._events(repo, issue, query)
        if rest == "/issues":
            if method == "POST":
                number = repo.next_number()
                repo.issues[number] = Issue(
                    number, body.get("title", ""), body=body.get("body", "")
                )
                return 201, self._issue_json(repo, repo.issues[number])
            return 200, self._issue_list(repo, query)
        if m2 := re.fullmatch(r"/commits/([\w./-]+)", rest):
            sha = git.resolve(m2.group(1))
            if sha is None:
                return 422, {"message": f"No commit found for SHA: {m2.group(1)}"}
            return 200, self._commit_json(repo, git, sha)
        if m2 := re.fullmatch(r"/compare/(.+?)\.\.\.(.+)", rest):
            return self._compare(repo, git, m2.group(1), m2.group(2), query)
        if m2 := re.fullmatch(r"/contents/(.+)", rest):
            return self._contents(repo, git, unquote(m2.group(1)), query.get("ref", "HEAD"))
        return 404, {"message": "Not Found"}

    def _contents(self, repo: Repo, git: _Git, path: str, ref: str) -> tuple[int, Any]:
        """``GET /repos/{o}/{r}/contents/{path}?ref=`` of a file: base64 ``content`` of
        ``git show REF:PATH`` (404 for a path that is no file there, as GitHub answers)."""
        import base64

        sha = git.resolve(ref)
        if sha is None:
            return 404, {"message": f"No commit found for the ref {ref}"}
        proc = subprocess.run(
            ["git", "-C", git.dir, "cat-file", "blob", f"{sha}:{path}"],
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            return 404, {"message": "Not Found"}
        data = proc.stdout
        return 200, {
            "type": "file",
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "size": len(data),
            "sha": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
            "encoding": "base64",
            "content": base64.encodebytes(data).decode(),
        }

    def _pull_json(self, repo: Repo, p: Pull) -> dict[str, Any]:
        return {
            "url": f"{self.url}/repos/{repo.name}/pulls/{p.number}",
            "html_url": f"https://github.com/{repo.name}/pull/{p.number}",
            "number": p.number,
            "title": p.title,
            "state": "closed" if p.merged else p.state,
            "draft": p.draft,
            "merged": p.merged,
            "merged_at": p.merged_at,
            "closed_at": p.closed_at or (p.merged_at if p.merged else None),
            "merge_commit_sha": p.merge_commit_sha,
            "base": {"ref": p.base, "repo": {"full_name": repo.name}},
            "head": {"ref": f"pr-{p.number}"},
        }

    def _issue_json(self, repo: Repo, i: Issue) -> dict[str, Any]:
        return {
            "url": f"{self.url}/repos/{repo.name}/issues/{i.number}",
            "html_url": f"https://github.com/{repo.name}/issues/{i.number}",
            "number": i.number,
            "title": i.title,
            "state": i.state,
            "state_reason": i.state_reason,
            "closed_at": i.closed_at,
            "body": i.body,
        }

    def _issue_rest(self, repo: Repo, number: int, method: str, body: Any) -> tuple[int, Any]:
        if method == "PATCH":
            issue = repo.issues.get(number)
            if issue is None:
                return 404, {"message": "Not Found"}
            issue.body = body.get("body", issue.body)
            issue.title = body.get("title", issue.title)
            return 200, self._issue_json(repo, issue)
        if number in repo.issues:
            return 200, self._issue_json(repo, repo.issues[number])
        if number in repo.pulls:
            p = repo.pulls[number]
            data = self._issue_json(
                repo, Issue(number, p.title, state=self._pull_json(repo, p)["state"])
            )
            data["pull_request"] = {"url": f"{self.url}/repos/{repo.name}/pulls/{number}"}
            return 200, data
        return 404, {"message": "Not Found"}

    def _issue_list(self, repo: Repo, query: dict[str, str]) -> list[dict[str, Any]]:
        state = query.get("state", "open")
        items = []
        for number in sorted({*repo.issues, *repo.pulls}, reverse=True):
            if number in repo.issues:
                data = self._issue_json(repo, repo.issues[number])
            else:
                p = repo.pulls[number]
                data = self._issue_json(
                    repo, Issue(number, p.title, state=self._pull_json(repo, p)["state"])
                )
                data["pull_request"] = {}
            if state == "all" or data["state"] == state:
                items.append(data)
        per_page, page = int(query.get("per_page", 30)), int(query.get("page", 1))
        return items[(page - 1) * per_page : page * per_page]

    def _events(self, repo: Repo, issue: Issue, query: dict[str, str]) -> list[dict[str, Any]]:
        if issue.state != "closed" or int(query.get("page", 1)) > 1:
            return []
        commit = issue.closed_by_commit
        if commit is None and issue.closed_by_pull is not None:
            pull = repo.pulls.get(issue.closed_by_pull)
            commit = pull.merge_commit_sha if pull and pull.merged else None
        return [
            {"id": 1, "event": "labeled", "commit_id": None, "created_at": issue.closed_at},
            {"id": 2, "event": "closed", "commit_id": commit, "created_at": issue.closed_at},
        ]

    def _commit_json(self, repo: Repo, git: _Git, sha: str) -> dict[str, Any]:
        c = git.commit(sha)
        return {
            "sha": c["sha"],
            "url": f"{self.url}/repos/{repo.name}/commits/{c['sha']}",
            "html_url": f"https://github.com/{repo.name}/commit/{c['sha']}",
            "commit": {
                "message": c["message"],
                "author": {"name": c["name"], "email": c["email"], "date": c["adate"]},
                "committer": {"name": c["name"], "email": c["email"], "date": c["cdate"]},
            },
            "parents": [{"sha": p} for p in c["parents"]],
        }

    def _compare(
        self, repo: Repo, git: _Git, base_ref: str, head_ref: str, query: dict[str, str]
    ) -> tuple[int, Any]:
        base, head = git.resolve(base_ref), git.resolve(head_ref)
        if base is None or head is None:
            return 404, {"message": "Not Found"}
        ahead = git.range(base, head)
        behind = git.range(head, base)
        if ahead and behind:
            status = "diverged"
        elif ahead:
            status = "ahead"
        elif behind:
            status = "behind"
        else:
            status = "identical"
        per_page, page = min(int(query.get("per_page", 250)), 250), int(query.get("page", 1))
        shown = ahead[(page - 1) * per_page : page * per_page]
        merge_base = git.merge_base(base, head)
        return 200, {
            "url": f"{self.url}/repos/{repo.name}/compare/{base_ref}...{head_ref}",
            "html_url": f"https://github.com/{repo.name}/compare/{base_ref}...{head_ref}",
            "status": status,
            "ahead_by": len(ahead),
            "behind_by": len(behind),
            "total_commits": len(ahead),
            "base_commit": self._commit_json(repo, git, base),
            "merge_base_commit": self._commit_json(repo, git, merge_base) if merge_base else None,
            "commits": [self._commit_json(repo, git, sha) for sha in shown],
            "files": [],
        }

    # -- GraphQL --------------------------------------------------------------------------------

    def _graphql(self, doc: dict[str, Any]) -> dict[str, Any]:
        query = str(doc.get("query") or "")
        variables = doc.get("variables") or {}
        data: dict[str, Any] = {}
        errors: list[dict[str, Any]] = []
        repo_aliases = re.findall(r"(r\d+): repository\(owner: \$(\w+), name: \$(\w+)\)", query)
        items = re.findall(r"(i(\d+)_\d+): issueOrPullRequest\(number: (\d+)\)", query)
        for alias, owner_var, name_var in repo_aliases:
            name = f"{variables.get(owner_var)}/{variables.get(name_var)}"
            repo = self.repos.get(name.lower())
            if repo is None:
                data[alias] = None
                errors.append(
                    {
                        "type": "NOT_FOUND",
                        "path": [alias],
                        "message": f"Could not resolve to a Repository with the name '{name}'.",
                    }
                )
                continue
            fields: dict[str, Any] = {}
            for item_alias, repo_index, number in items:
                if f"r{repo_index}" != alias:
                    continue
                node = self._graphql_node(repo, int(number))
                fields[item_alias] = node
                if node is None:
                    errors.append(
                        {
                            "type": "NOT_FOUND",
                            "path": [alias, item_alias],
                            "message": f"Could not resolve to an issue or pull request with the "
                            f"number of {number}.",
                        }
                    )
            data[alias] = fields
        if "rateLimit" in query:
            data["rateLimit"] = {"cost": 1, "remaining": max(0, self.limit - self.used)}
        out: dict[str, Any] = {"data": data}
        if errors:
            out["errors"] = errors
        return out

    def _graphql_pull(self, repo: Repo, p: Pull) -> dict[str, Any]:
        return {
            "__typename": "PullRequest",
            "number": p.number,
            "title": p.title,
            "url": f"https://github.com/{repo.name}/pull/{p.number}",
            "state": "MERGED" if p.merged else p.state.upper(),
            "isDraft": p.draft,
            "merged": p.merged,
            "mergedAt": p.merged_at,
            "closedAt": p.closed_at or (p.merged_at if p.merged else None),
            "mergeCommit": {"oid": p.merge_commit_sha} if p.merged and p.merge_commit_sha else None,
            "baseRefName": p.base,
        }

    def _graphql_node(self, repo: Repo, number: int) -> dict[str, Any] | None:
        if number in repo.pulls:
            return self._graphql_pull(repo, repo.pulls[number])
        issue = repo.issues.get(number)
        if issue is None:
            return None
        nodes: list[dict[str, Any]] = []
        if issue.state == "closed":
            closer: dict[str, Any] | None = None
            if issue.closed_by_pull is not None and issue.closed_by_pull in repo.pulls:
                closer = self._graphql_pull(repo, repo.pulls[issue.closed_by_pull])
            elif issue.closed_by_commit:
                closer = {"__typename": "Commit", "oid": issue.closed_by_commit}
            nodes.append({"closer": closer})
        return {
            "__typename": "Issue",
            "number": issue.number,
            "title": issue.title,
            "url": f"https://github.com/{repo.name}/issues/{issue.number}",
            "state": issue.state.upper(),
            "stateReason": issue.state_reason.upper() if issue.state_reason else None,
            "closedAt": issue.closed_at,
            "timelineItems": {"nodes": nodes},
        }


def git(cwd: Any, *args: str, date: str | None = None) -> str:
    """Run git in ``cwd`` with a fixed identity (and commit date), return its stdout."""
    import os

    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "dev",
        "GIT_AUTHOR_EMAIL": "dev@example.invalid",
        "GIT_COMMITTER_NAME": "dev",
        "GIT_COMMITTER_EMAIL": "dev@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    if date is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


def now_utc() -> str:
    return _utc(time.time())


# -- a history with every kind of merge -------------------------------------------------------


def build_engine_history(path: Any) -> dict[str, str]:
    """A real git repository ``acme/engine`` (oldest first on ``main``)::

        B0   base                                    2026-07-01
        S    Add fast path (#11)            squash   2026-07-05
        F12  Faster sampler                 (branch) 2026-07-06
        MC   Merge pull request #12 ...     merge    2026-07-07
        C13a Split cache helper             rebase   2026-07-08
        C13b Use cache helper               rebase   2026-07-08  (PR #13's merge_commit_sha)
        K15  Tune cache (#15)                        2026-07-09
        T    Revert "Tune cache (#15)"      (title only, no "This reverts commit")  2026-07-10
        P    Release 1.0                    <- the pinned commit                    2026-07-15
        L    Late fix (#14)                 merged after the pin                    2026-07-20
        H    docs (#19)                                                             2026-07-25

    and a branch ``experiment`` off B0 with ``Z`` (never merged). Returns name -> commit id.
    """
    from pathlib import Path

    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    ids: dict[str, str] = {}

    def commit(name: str, message: str, when: str, file: str, text: str) -> None:
        (root / file).parent.mkdir(parents=True, exist_ok=True)
        (root / file).write_text(text)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", message, date=when)
        ids[name] = git(root, "rev-parse", "HEAD")

    commit("B0", "base", "2026-07-01T10:00:00Z", "engine/core.py", "def run():\n    pass\n")
    commit("S", "Add fast path (#11)", "2026-07-05T10:00:00Z", "engine/fast.py", "FAST = 1\n")
    git(root, "checkout", "-q", "-b", "sampler")
    commit("F12", "Faster sampler", "2026-07-06T10:00:00Z", "engine/sampler.py", "S = 2\n")
    git(root, "checkout", "-q", "main")
    git(
        root,
        "merge",
        "-q",
        "--no-ff",
        "-m",
        "Merge pull request #12 from dev/sampler",
        "sampler",
        date="2026-07-07T10:00:00Z",
    )
    ids["MC"] = git(root, "rev-parse", "HEAD")
    commit("C13a", "Split cache helper", "2026-07-08T10:00:00Z", "engine/cache.py", "A = 1\n")
    commit("C13b", "Use cache helper", "2026-07-08T11:00:00Z", "engine/cache.py", "A = 2\n")
    commit("K15", "Tune cache (#15)", "2026-07-09T10:00:00Z", "engine/tune.py", "T = 1\n")
    commit("T", 'Revert "Tune cache (#15)"', "2026-07-10T10:00:00Z", "engine/tune.py", "T = 0\n")
    commit("P", "Release 1.0", "2026-07-15T10:00:00Z", "VERSION", "1.0\n")
    commit("L", "Late fix (#14)", "2026-07-20T10:00:00Z", "engine/late.py", "L = 1\n")
    commit("H", "docs (#19)", "2026-07-25T10:00:00Z", "README", "docs\n")
    git(root, "checkout", "-q", "-b", "experiment", ids["B0"])
    commit("Z", "Experimental kernel", "2026-07-03T10:00:00Z", "engine/exp.py", "Z = 1\n")
    git(root, "checkout", "-q", "main")
    return ids


def serve_engine(standin: GitHubStandIn, path: Any, ids: dict[str, str]) -> Repo:
    """Serve :func:`build_engine_history` as ``acme/engine`` with its pull requests and issues:
    #11 squash, #12 merge commit, #13 rebase (all before the pin), #14 merged after the pin,
    #15 merged then reverted by title before the pin, #16 closed without merge, #17 open,
    #18 draft; issues #20 open, #21 closed by #11, #22 closed as not planned."""
    repo = standin.add_repo("acme/engine", str(path))

    def merged(n: int, title: str, sha: str, when: str) -> None:
        repo.pulls[n] = Pull(n, title, "closed", merged=True, merge_commit_sha=sha, merged_at=when)

    merged(11, "Add fast path", ids["S"], "2026-07-05T10:00:00Z")
    merged(12, "Faster sampler", ids["MC"], "2026-07-07T10:00:00Z")
    merged(13, "Cache helper", ids["C13b"], "2026-07-08T11:00:00Z")
    merged(14, "Late fix", ids["L"], "2026-07-20T10:00:00Z")
    merged(15, "Tune cache", ids["K15"], "2026-07-09T10:00:00Z")
    repo.pulls[16] = Pull(16, "Abandoned idea", "closed", closed_at="2026-07-02T10:00:00Z")
    repo.pulls[17] = Pull(17, "Open work")
    repo.pulls[18] = Pull(18, "Draft work", draft=True)
    repo.issues[20] = Issue(20, "Crash under load")
    repo.issues[21] = Issue(
        21,
        "Slow path",
        "closed",
        state_reason="completed",
        closed_at="2026-07-05T10:00:00Z",
        closed_by_pull=11,
    )
    repo.issues[22] = Issue(
        22, "Wontfix", "closed", state_reason="not_planned", closed_at="2026-07-02T10:00:00Z"
    )
    return repo
