"""Every ``pyhpa`` command of README.md and docs/*.md runs from a plain clone of the repository.

The commands are read from the fenced shell blocks (``sh``, ``bash``, ``shell``, ``console``; a block without a
language may not hold a ``pyhpa`` command, usage synopses are ``text``), continuation lines joined, comments
dropped, and run in document order (README.md, then docs/ by name) in a clean copy of the repository (no
``../shared`` next to it), each within a time budget; it must exit 0 without a traceback. Identical commands run
once. What a command needs beyond the clone is supplied by the test, never skipped:

* a cluster: one kubedouble (the in-process API server double), seeded with HorizontalAutoscalers ``prod/web``
  and ``default/web``, their Deployments, pods and metrics, and a native HPA ``default/web``. Commands that read
  a kubeconfig get one for it (``KUBECONFIG``); ``http://127.0.0.1:8001`` (the documented local double) is
  rewritten to its URL and ``--health-port 8080`` to a free port;
* ``pyhpa run ...`` serves until SIGTERM: it must reach "caches synced", then stop with exit code 0;
* ``... | kubectl apply -f -``: the manifests are applied to the double (the CRD registered, the Namespace and
  Deployment created) and every other object is checked against the official schemas, as the API server would;
* other segments on a line: ``python -m kubedouble ... &`` is the test's double (its own test:
  test_cli_first_contact.py), ``pip install ...`` is not run (the test environment is that install;
  test_packaging.py installs the package into a fresh venv).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from lightkube import codecs

from controller_util import CRD, autoscaler, deployment, pod
from kubedouble import KubeDouble
from repo_copy import ROOT, clean_copy
from test_controller_preview import native_hpa

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"sh", "bash", "shell", "console"}
BUDGET_SECONDS = 120  # per command (the longest, a month of Bitbrains with plots, takes ~15 s)
NOT_RUN = {"pip": "the test environment is that install (test_packaging.py checks `pip install .`)"}


def fenced_blocks(path: Path):
    """(language, first line number, text) of each fenced block."""
    text = path.read_text()
    for m in re.finditer(r"^```([^\n]*)\n(.*?)^```", text, re.S | re.M):
        yield m.group(1).strip(), text[:m.start()].count("\n") + 2, m.group(2)


def shell_lines(body: str) -> list[str]:
    """Command lines of a shell block: continuations joined; heredoc bodies and blank lines dropped."""
    out, heredoc = [], None
    for line in re.sub(r"\\\n\s*", " ", body).splitlines():
        if heredoc is not None:
            heredoc = None if line.strip() == heredoc else heredoc
            continue
        m = re.search(r"<<-?'?(\w+)'?", line)
        if m:
            heredoc = m.group(1)
        if line.strip():
            out.append(line.strip())
    return out


def segments(line: str) -> list[tuple[str, list[str]]]:
    """A command line as (operator before it, tokens) pieces; operators ``&&``, ``&``, ``|``, ``;``; comments
    dropped."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.commenters = "#"
    lexer.whitespace_split = True
    out, op, current = [], "", []
    for token in lexer:
        if token in ("&&", "&", "|", ";"):
            out.append((op, current))
            op, current = token, []
        else:
            current.append(token)
    if current:
        out.append((op, current))
    return out


def documented_commands() -> list[tuple[str, str]]:
    """(where, command line) of every line holding a ``pyhpa`` command, in document order."""
    found = []
    for path in DOCS:
        for lang, lineno, body in fenced_blocks(path):
            rel = path.relative_to(ROOT)
            if lang in SHELL:
                for line in shell_lines(body):
                    if any(tokens[:1] == ["pyhpa"] for _, tokens in segments(line)):
                        found.append((f"{rel}:{lineno}", line))
            elif lang == "":
                for line in body.splitlines():
                    assert not re.match(r"\s*pyhpa\s", line), f"{rel}:{lineno}: a command outside a shell block: {line}"
    return found


def test_the_docs_have_commands_to_run():
    commands = [c for _, c in documented_commands()]
    assert len(commands) >= 20
    assert not any("../shared" in c or "/work/" in c for c in commands)
    for needed in ("pyhpa simulate", "pyhpa explain", "pyhpa thresholds", "pyhpa manifests", "pyhpa run",
                   "pyhpa snapshot"):
        assert any(needed in c for c in commands), needed


# ----------------------------------------------------------------------------------------------- the cluster
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
    """Runs documented command lines in the clean copy against the double."""

    def __init__(self, workdir: Path, kd: KubeDouble):
        self.workdir, self.kd = workdir, kd
        self.env = dict(os.environ, PYTHONPATH=str(workdir), KUBECONFIG=str(_kubeconfig(workdir / ".kubeconfig", kd.url)),
                        COLUMNS="100", MPLBACKEND="Agg", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")

    def args(self, tokens: list[str]) -> list[str]:
        health = str(_free_port())
        out = []
        for i, t in enumerate(tokens):
            t = t.replace("http://127.0.0.1:8001", self.kd.url)
            if i and tokens[i - 1] == "--health-port" and t == "8080":
                t = health
            out.append(t)
        return [sys.executable, "-m", "pyhpa.cli.main", *out[1:]]

    def run_line(self, line: str) -> None:
        parts = segments(line)
        i = 0
        while i < len(parts):
            op, tokens = parts[i]
            nxt = parts[i + 1] if i + 1 < len(parts) else ("", [])
            if tokens[:1] == ["pyhpa"] and nxt[0] == "|":
                self.pipe(tokens, nxt[1])
                i += 2
                continue
            if tokens[:1] == ["pyhpa"]:
                self.run(tokens)
            elif tokens[:3] == ["python", "-m", "kubedouble"] and nxt[0] == "&":
                pass  # the documented local double: the test's double serves its URL
            elif tokens[:1] and tokens[0] in NOT_RUN:
                pass  # see NOT_RUN for why
            else:
                raise AssertionError(f"no rule to run {' '.join(tokens)!r} (from {line!r})")
            i += 1

    def run(self, tokens: list[str]) -> None:
        if tokens[1:2] == ["run"]:
            return self.serve(tokens)
        done = subprocess.run(self.args(tokens), cwd=self.workdir, env=self.env, capture_output=True, text=True,
                              timeout=BUDGET_SECONDS)
        output = done.stdout + done.stderr
        assert done.returncode == 0 and "Traceback" not in output, output[-3000:]

    def serve(self, tokens: list[str]) -> None:
        """``pyhpa run``: until its caches synced (the leader after taking the Lease), then SIGTERM: exit 0."""
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

    def pipe(self, tokens: list[str], consumer: list[str]) -> None:
        assert consumer == ["kubectl", "apply", "-f", "-"], consumer
        done = subprocess.run(self.args(tokens), cwd=self.workdir, env=self.env, capture_output=True, text=True,
                              timeout=BUDGET_SECONDS)
        assert done.returncode == 0, done.stderr
        docs = [d for d in yaml.safe_load_all(done.stdout) if d]
        assert docs, done.stdout
        client = self.kd.client()
        for doc in docs:
            if doc["kind"] == "CustomResourceDefinition":
                self.kd.register_crd(doc)
            elif doc["kind"] in ("Namespace", "Deployment"):
                client.apply(codecs.from_dict(doc), field_manager="kubectl")
            else:  # kinds the double does not serve (RBAC, ServiceAccount): the API server's schema check
                kubernetes_validate.validate(doc, "1.37", strict=True)
        assert self.kd.invalid_requests == []


def test_every_documented_pyhpa_command_runs_from_a_plain_clone(tmp_path):
    workdir = clean_copy(tmp_path / "clone")
    assert not (tmp_path / "shared").exists() and not (workdir.parent / "shared").exists()
    kd = KubeDouble.start_in_thread()
    failures, ran = [], set()
    try:
        _seed(kd)
        runner = Runner(workdir, kd)
        for where, line in documented_commands():
            key = " ".join(line.split("#")[0].split())
            if key in ran:
                continue  # the same command again (README and docs): run once
            ran.add(key)
            try:
                runner.run_line(line)
            except (AssertionError, subprocess.TimeoutExpired) as err:
                failures.append(f"{where}: {line}\n    {str(err)[-1500:]}")
    finally:
        kd.stop()
    assert not failures, "\n".join(failures)
    assert (workdir / "wc98" / "compare.png").exists() and (workdir / "web.yaml").exists()
