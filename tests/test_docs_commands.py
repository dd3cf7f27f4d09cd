"""Every command of README.md and docs/*.md runs from a fresh ``git clone`` and leaves ``git status`` clean.

The commands are read from the fenced shell blocks (``sh``, ``bash``, ``shell``, ``console``; a block without a
language may not hold a ``pyhpa`` command, usage synopses are ``text``), continuation lines joined, comments
dropped. The repository is cloned (``git clone``; uncommitted changes of the working tree are committed on top in
the clone, so it holds what a clone after committing them would), the commands run there (the package importable
from the clone, no ``../shared`` next to it), each within a time budget, and must exit 0 without a traceback;
afterwards ``git status --porcelain`` must print nothing: every output lands in a gitignored folder (``out/``).
Blocks run concurrently, the lines of a block in order; identical commands run once.

Rules, not a list of exceptions (docs/cli.md, "Documentation commands"):

* a line whose comment carries a mark ``(needs Docker)``, ``(needs network)``, ``(needs kubectl)``, ``(needs helm)``
  or ``(takes minutes)`` is not run;
* ``pip install ...`` is not run (the test environment is that install; test_packaging.py installs the package
  into a fresh venv);
* the cluster is one kubedouble (the in-process API server double), seeded with HorizontalAutoscalers
  ``prod/web`` and ``default/web``, their Deployments, pods and metrics, and a native HPA ``default/web``.
  Commands that read a kubeconfig get one for it (``KUBECONFIG``); ``http://127.0.0.1:8001`` (the documented
  local double) is rewritten to its URL, the kubeconfig of the local control plane
  (``~/.cache/pyhpa/control-plane/v1.37.2/run/admin.kubeconfig``, ``python -m controlplane up``: its own test is
  tests/e2e/test_controlplane_cli.py) to the double's, and ``--health-port 8080`` to a free port;
  ``python -m kubedouble ... &`` is that double (its own test: test_cli_first_contact.py);
* ``pyhpa run ...`` serves until SIGTERM: it must reach "caches synced", then stop with exit code 0;
* ``kubectl apply -f -`` (piped from pyhpa, or a heredoc): the CRD is registered; Namespaces and Deployments are
  applied and HorizontalAutoscalers stored in the double; every other object is checked against the official
  schemas, as the API server would;
* ``python benchmarks/NAME.py ...`` runs with the test's interpreter.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import kubernetes_validate
import yaml
from controller_util import CRD, autoscaler, deployment, pod
from lightkube import codecs
from repo_copy import ROOT, clean_copy
from test_controller_preview import native_hpa

from kubedouble import KubeDouble

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"sh", "bash", "shell", "console"}
BUDGET_SECONDS = 300  # per command: a guard against a hang (each takes at most 10 CPU seconds; the machine may be busy)
NOT_RUN = {"pip": "the test environment is that install (test_packaging.py checks `pip install .`)"}
#: A line whose comment carries one of these is not run (docs/cli.md, "Documentation commands").
MARK = re.compile(r"\((needs Docker|needs network|needs kubectl|needs helm|takes minutes)\)")
WORKERS = 3
#: the kubeconfig ``python -m controlplane up`` writes (README), rewritten to the double's
CONTROL_PLANE_KUBECONFIG = "/.cache/pyhpa/control-plane/v1.37.2/run/admin.kubeconfig"


def fenced_blocks(path: Path):
    """(language, first line number, text) of each fenced block."""
    text = path.read_text()
    for m in re.finditer(r"^```([^\n]*)\n(.*?)^```", text, re.S | re.M):
        yield m.group(1).strip(), text[:m.start()].count("\n") + 2, m.group(2)


def shell_lines(body: str) -> list[tuple[str, str | None]]:
    """(command line, its heredoc's text or None) of a shell block: continuations joined, blank lines dropped."""
    out: list[tuple[str, str | None]] = []
    heredoc, lines = None, []
    for line in re.sub(r"\\\n\s*", " ", body).splitlines():
        if heredoc is not None:
            if line.strip() == heredoc:
                out[-1] = (out[-1][0], "\n".join(lines) + "\n")
                heredoc, lines = None, []
            else:
                lines.append(line)
            continue
        m = re.search(r"<<-?'?(\w+)'?", line)
        if m:
            heredoc = m.group(1)
        if line.strip():
            out.append((line.strip(), None))
    return out


def segments(line: str) -> list[tuple[str, list[str]]]:
    """A command line as (operator before it, tokens) pieces; operators ``&&``, ``&``, ``|``, ``;``; comments
    and heredoc redirections dropped."""
    lexer = shlex.shlex(re.sub(r"<<-?'?\w+'?", "", line), posix=True, punctuation_chars=";&|")
    lexer.commenters = "#"
    lexer.whitespace_split = True
    out, op, current = [], "", []
    for token in lexer:
        if token in ("&&", "&", "|", ";"):
            out.append((op, current))
            op, current = token, []
        else:
            current.append(token)
    if current or op:
        out.append((op, current))  # a trailing operator (``cmd &``) as an empty last piece
    return out


def marked(line: str) -> bool:
    """Whether the line's comment marks it as not run by this test (``MARK``)."""
    return bool(MARK.search(line.partition("#")[2]))


def documented_blocks() -> list[tuple[str, list[tuple[str, str | None]]]]:
    """(where, [(command line, heredoc)]) of every shell block, in document order."""
    found = []
    for path in DOCS:
        rel = path.relative_to(ROOT)
        for lang, lineno, body in fenced_blocks(path):
            if lang in SHELL:
                found.append((f"{rel}:{lineno}", shell_lines(body)))
            elif lang == "":
                for line in body.splitlines():
                    assert not re.match(r"\s*pyhpa\s", line), f"{rel}:{lineno}: a command outside a shell block: {line}"
    return found


def documented_commands() -> list[tuple[str, str]]:
    """(where, command line) of every line holding a ``pyhpa`` command, in document order."""
    return [(where, line) for where, block in documented_blocks() for line, _ in block
            if any(tokens[:1] == ["pyhpa"] for _, tokens in segments(line))]


def test_the_docs_have_commands_to_run():
    commands = [c for _, c in documented_commands()]
    assert len(commands) >= 20
    assert not any("../shared" in c or "/work/" in c for c in commands)
    for needed in ("pyhpa simulate", "pyhpa explain", "pyhpa thresholds", "pyhpa manifests", "pyhpa run",
                   "pyhpa snapshot", "pyhpa forecast", "pyhpa schedules"):
        assert any(needed in c for c in commands), needed


def test_only_what_needs_more_than_a_clone_is_marked_and_outputs_go_to_out():
    """Docker, kind, helm and kubectl (beyond ``apply -f -``) lines carry a mark; no pyhpa command does; every file or
    folder a documented command is told to write is under out/ (gitignored)."""
    for where, block in documented_blocks():
        for line, _ in block:
            parts = segments(line)
            first = parts[0][1][:1] if parts else []
            if first in (["docker"], ["kind"], ["helm"]) or (first == ["kubectl"] and line.split()[1:2] != ["apply"]):
                assert marked(line), f"{where}: {line}"
            if marked(line):
                assert not any(tokens[:1] == ["pyhpa"] for _, tokens in segments(line)), f"{where}: {line}"
            for m in re.finditer(r"--(?:output-dir|output-file|plot-file|out)\s+(\S+)", line.partition("#")[0]):
                assert m.group(1).startswith("out/"), f"{where}: {line}"


def test_the_mark_rule():
    assert marked("docker build -t pyhpa:0.1.0 .   # the image (needs Docker)")
    assert marked("python benchmarks/proactive.py   # 4 traces (takes minutes)")
    assert not marked("pyhpa simulate   # needs Docker in prose only")
    assert not marked("echo '(needs Docker)'")
    assert shell_lines("kubectl apply -f - <<'EOF'\nkind: X\nEOF\nkubectl get x\n") == [
        ("kubectl apply -f - <<'EOF'", "kind: X\n"), ("kubectl get x", None)]


# --------------------------------------------------------------------------------------------------- the clone
def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=120).stdout


def fresh_clone(dest: Path) -> Path:
    """``git clone`` of the repository into ``dest``, with the working tree's uncommitted changes (tracked and new
    files git does not ignore, deletions) committed on top; a plain copy put under git where the repository is not
    a git checkout (an unpacked sdist)."""
    try:
        _git(ROOT, "rev-parse", "--git-dir")
        _git(dest.parent, "clone", "-q", "--no-hardlinks", str(ROOT), dest.name)
        for p in dest.rglob("*"):
            if p.is_file() and ".git" not in p.relative_to(dest).parts:
                p.unlink()
        clean_copy(dest)
    except (OSError, subprocess.CalledProcessError):
        clean_copy(dest)
        _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    if _git(dest, "status", "--porcelain"):
        _git(dest, "-c", "user.name=docs test", "-c", "user.email=docs@test", "commit", "-q", "-m", "working tree")
    return dest


# ------------------------------------------------------------------------------------------------- the cluster
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _seed(kd: KubeDouble) -> None:
    kd.register_crd(CRD)
    for ns in ("default", "prod"):
        kd.put_object(deployment("web", 2, ns=ns) | {"status": {"replicas": 2}})
        for i in range(2):
            kd.put_object(pod(f"web-{i}", "web", ns=ns))
            kd.set_pod_metrics(ns, f"web-{i}", {"app": {"cpu": "120m"}})
        kd.put_object(autoscaler("web", "web", ns=ns))
    kd.put_object(native_hpa("web", desired=2, current=2))


def _kubeconfig(path: Path, url: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "double",
        "clusters": [{"name": "double", "cluster": {"server": url}}],
        "users": [{"name": "nobody", "user": {}}],
        "contexts": [{"name": "double", "context": {"cluster": "double", "user": "nobody", "namespace": "default"}}]}))
    return path


class Runner:
    """Runs documented command lines in the clone against the double."""

    def __init__(self, workdir: Path, kd: KubeDouble, kubeconfig: Path):
        self.workdir, self.kd = workdir, kd
        self.env = dict(os.environ, PYTHONPATH=str(workdir), KUBECONFIG=str(kubeconfig), COLUMNS="100",
                        MPLBACKEND="Agg", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
        self.ran: set[str] = set()
        self.skipped: list[str] = []
        self.seconds: list[tuple[float, float, str]] = []  # (wall s, CPU s, command): shown with -s, never asserted
        self.lock = threading.Lock()
        self.serving = threading.Lock()  # one `pyhpa run` at a time: each serves /metrics on the default port

    def args(self, tokens: list[str]) -> list[str]:
        health = str(_free_port())
        out = []
        for i, t in enumerate(tokens):
            t = t.replace("http://127.0.0.1:8001", self.kd.url)
            if t.endswith(CONTROL_PLANE_KUBECONFIG):  # the local control plane (python -m controlplane up): the double
                t = self.env["KUBECONFIG"]
            if i and tokens[i - 1] == "--health-port" and t == "8080":
                t = health
            out.append(t)
        if out[0] == "pyhpa":
            return [sys.executable, "-m", "pyhpa.cli.main", *out[1:]]
        return [sys.executable, *out[1:]]  # python benchmarks/NAME.py ...

    def run_block(self, where: str, block: list[tuple[str, str | None]]) -> list[str]:
        """Run the lines of one block in order; the failures as text."""
        failures = []
        for line, heredoc in block:
            if marked(line):
                with self.lock:
                    self.skipped.append(line)
                continue
            try:
                self.run_line(line, heredoc)
            except (AssertionError, subprocess.TimeoutExpired) as err:
                failures.append(f"{where}: {line}\n    {str(err)[-1500:]}")
        return failures

    def run_line(self, line: str, heredoc: str | None = None) -> None:
        parts = segments(line)
        i = 0
        while i < len(parts):
            op, tokens = parts[i]
            if not tokens:
                i += 1
                continue
            nxt = parts[i + 1] if i + 1 < len(parts) else ("", [])
            if tokens[:1] == ["pyhpa"] and nxt[0] == "|":
                assert nxt[1] == ["kubectl", "apply", "-f", "-"], nxt[1]
                self.apply(self.output(tokens))
                i += 2
                continue
            if tokens[:1] == ["pyhpa"]:
                self.run(tokens)
            elif tokens[:4] == ["kubectl", "apply", "-f", "-"] and heredoc is not None:
                self.apply(heredoc)
            elif tokens[:3] == ["python", "-m", "kubedouble"] and nxt[0] == "&":
                pass  # the documented local double: the test's double serves its URL
            elif tokens[:1] == ["python"] and tokens[1:2] and re.fullmatch(r"benchmarks/\w+\.py", tokens[1]):
                self.run(tokens)
            elif tokens[:1] and tokens[0] in NOT_RUN:
                pass  # see NOT_RUN for why
            else:
                raise AssertionError(f"no rule to run {' '.join(tokens)!r} (from {line!r}); mark it (docs/cli.md)")
            i += 1

    def run(self, tokens: list[str]) -> None:
        with self.lock:
            if " ".join(tokens) in self.ran:
                return  # the same command in another line (README and docs): run once
            self.ran.add(" ".join(tokens))
        if tokens[:2] == ["pyhpa", "run"]:
            return self.serve(tokens)
        self.output(tokens)

    def output(self, tokens: list[str]) -> str:
        """Run a command to its end (killed after ``BUDGET_SECONDS``); assert exit 0 and no traceback; its stdout.
        Its wall and CPU seconds go to ``seconds`` (printed, never asserted)."""
        began = time.monotonic()
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            proc = subprocess.Popen(self.args(tokens), cwd=self.workdir, env=self.env, stdout=out, stderr=err,
                                    text=True)
            timer = threading.Timer(BUDGET_SECONDS, proc.kill)
            timer.start()
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            finally:
                timer.cancel()
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
        self.seconds.append((round(time.monotonic() - began, 1), round(usage.ru_utime + usage.ru_stime, 1),
                             " ".join(tokens)[:150]))
        output = stdout + stderr
        assert proc.returncode != -signal.SIGKILL, f"still running after {BUDGET_SECONDS} s"
        assert proc.returncode == 0 and "Traceback" not in output, output[-3000:]
        return stdout

    def serve(self, tokens: list[str]) -> None:
        """``pyhpa run``: until its caches synced (the leader after taking the Lease), then SIGTERM: exit 0."""
        with self.serving:
            self._serve(tokens)

    def _serve(self, tokens: list[str]) -> None:
        proc = subprocess.Popen(self.args(tokens), cwd=self.workdir, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        seen = []
        try:
            deadline = time.monotonic() + BUDGET_SECONDS
            for line in proc.stdout:
                seen.append(line)
                if "caches synced" in line:
                    break
                assert time.monotonic() < deadline, "".join(seen)
            assert any("caches synced" in s for s in seen), "".join(seen)
            time.sleep(1.0)  # a few syncs
            proc.send_signal(signal.SIGTERM)
            rest, _ = proc.communicate(timeout=60)
            seen.append(rest)
        finally:
            if proc.poll() is None:
                proc.kill()
        output = "".join(seen)
        assert proc.returncode == 0 and "Traceback" not in output, output[-3000:]

    def apply(self, text: str) -> None:
        """``kubectl apply -f -`` of ``text`` to the double."""
        docs = [d for d in yaml.safe_load_all(text) if d]
        assert docs, text
        client = self.kd.client()
        for doc in docs:
            if doc["kind"] == "CustomResourceDefinition":
                self.kd.register_crd(doc)
            elif doc["kind"] in ("Namespace", "Deployment"):
                client.apply(codecs.from_dict(doc), field_manager="kubectl")
            elif doc["kind"] == "HorizontalAutoscaler":
                self.kd.put_object(doc)
            else:  # kinds the double does not serve (RBAC, ServiceAccount): the API server's schema check
                kubernetes_validate.validate(doc, "1.37", strict=True)
        assert self.kd.invalid_requests == []


def test_every_documented_command_runs_from_a_fresh_clone_and_leaves_git_status_clean(tmp_path):
    workdir = fresh_clone(tmp_path / "clone")
    assert not (tmp_path / "shared").exists() and not (workdir.parent / "shared").exists()
    kd = KubeDouble.start_in_thread()
    try:
        _seed(kd)
        runner = Runner(workdir, kd, _kubeconfig(tmp_path / "kubeconfig", kd.url))
        blocks = documented_blocks()
        with ThreadPoolExecutor(WORKERS) as pool:
            failures = [f for found in pool.map(lambda b: runner.run_block(*b), blocks) for f in found]
    finally:
        kd.stop()
    for wall, cpu, command in sorted(runner.seconds, key=lambda x: -x[1]):
        print(f"{wall:6.1f} s wall {cpu:5.1f} s CPU  {command}")
    print(f"CPU seconds of the commands: {sum(c for _, c, _ in runner.seconds):.0f}")
    assert not failures, "\n".join(failures)
    assert runner.skipped and all(marked(line) for line in runner.skipped)
    assert (workdir / "out" / "wc98" / "compare.png").exists() and (workdir / "out" / "web.yaml").exists()
    assert _git(workdir, "status", "--porcelain") == ""
