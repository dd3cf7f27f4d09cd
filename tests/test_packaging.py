"""What ships: the controller image (Dockerfile) matches the manifests, ``pip install .`` alone gives a working
controller, and every module the code imports is declared in the part of pyproject.toml that needs it."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
import venv
from importlib.metadata import packages_distributions

import pytest
import yaml
from repo_copy import ROOT, clean_copy

from pyhpa import __version__
from pyhpa.cli.run_cmd import DEFAULT_IMAGE, manifest_text

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, comments dropped, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def final_stage() -> list[tuple[str, str]]:
    steps = dockerfile()
    last = max(i for i, (w, _) in enumerate(steps) if w == "FROM")
    return steps[last:]


def controller_container() -> tuple[dict, dict]:
    deployment = next(d for d in yaml.safe_load_all(manifest_text("deployment")) if d and d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    return pod, next(c for c in pod["containers"] if c["name"] == "controller")


def test_the_image_is_a_slim_python_that_satisfies_requires_python():
    base = final_stage()[0][1].split()[0]
    m = re.fullmatch(r"python:(3\.\d+)-slim(?:-\w+)?", base)
    assert m, base
    minimum = re.fullmatch(r">=(3\.\d+)", PYPROJECT["project"]["requires-python"]).group(1)
    assert tuple(map(int, m.group(1).split("."))) >= tuple(map(int, minimum.split(".")))


def test_the_image_runs_what_the_deployment_expects():
    pod, container = controller_container()
    stage = dict(final_stage())  # the last of each instruction counts
    user, _, group = stage["USER"].partition(":")
    ctx = pod["securityContext"]
    assert ctx["runAsNonRoot"] is True and user.isdigit() and int(user) != 0  # numeric: runAsNonRoot can verify it
    assert ctx["runAsUser"] == int(user) and ctx["runAsGroup"] == int(group)
    assert json.loads(stage["ENTRYPOINT"]) == container["command"] == ["pyhpa"]
    assert json.loads(stage["CMD"]) == ["run"] == container["args"][:1]
    port = container["ports"][0]["containerPort"]
    assert int(stage["EXPOSE"]) == port
    assert container["args"][container["args"].index("--health-port") + 1] == str(port)
    assert container["image"] == DEFAULT_IMAGE == f"pyhpa:{__version__}"


def test_the_image_installs_only_the_controller():
    steps = dockerfile()
    installs = [rest for word, rest in steps if word == "RUN" and "pip install" in rest]
    assert len(installs) == 1 and installs[0].split()[-1] == "."  # the package, no [extras]
    copied = [rest.split()[:-1] for word, rest in steps if word == "COPY" and "--from" not in rest]
    assert sorted(p for c in copied for p in c) == ["README.md", "pyhpa", "pyproject.toml"]
    ignore = (ROOT / ".dockerignore").read_text().split()
    assert ignore[ignore.index("*")] == "*" and "!pyhpa/" in ignore and "!tests/" not in ignore


def test_the_documented_build_command_makes_the_default_image():
    command = f"docker build -t {DEFAULT_IMAGE} ."
    assert command in (ROOT / "Dockerfile").read_text()
    assert command in (ROOT / "README.md").read_text()
    assert command in (ROOT / "docs" / "controller.md").read_text()


def _distribution(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _third_party_imports(paths) -> dict[str, set[str]]:
    """Top-level module -> files importing it, for modules not of the standard library or this repository."""
    local = {"pyhpa", "kubedouble", "controlplane", "tests", "deploy", "benchmarks",
             *(p.stem for p in (ROOT / "tests").glob("*.py")), *(p.stem for p in (ROOT / "benchmarks").glob("*.py"))}
    found: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in local:
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def _declared(*groups: str) -> set[str]:
    deps = {_distribution(r) for r in PYPROJECT["project"]["dependencies"]}
    extras = PYPROJECT["project"]["optional-dependencies"]
    for g in groups:
        for r in extras[g]:
            if r.startswith("pyhpa["):
                deps |= _declared(*r[len("pyhpa["):-1].split(","))
            else:
                deps.add(_distribution(r))
    return deps


def _undeclared(paths, declared: set[str]) -> dict[str, set[str]]:
    dists = packages_distributions()
    missing = {}
    for module, files in _third_party_imports(paths).items():
        names = {d.lower().replace("_", "-") for d in dists.get(module, [module])}
        if not names & declared:
            missing[module] = files
    return missing


SIMULATE_ONLY = ("pyhpa/simulate/", "pyhpa/cli/simulate_cmd.py", "pyhpa/cli/forecast_cmd.py")
TUNE_ONLY = ("pyhpa/tune/", "pyhpa/cli/tune_cmd.py")
#: ``pyhpa fleet``: simulate's plots and tune's search, and Dask for ``fleet tune`` (the tune extra has them all)
FLEET_ONLY = ("pyhpa/fleet/", "pyhpa/cli/fleet_cmd.py")
#: the CRD generator (``deploy/generate_crd.py`` and the drift test call it; nothing at run time): the kubedouble extra
GENERATOR_ONLY = ("pyhpa/api/crd.py",)


def test_the_controller_code_imports_only_base_dependencies():
    paths = [p for p in (ROOT / "pyhpa").rglob("*.py")
             if not str(p.relative_to(ROOT)).startswith(SIMULATE_ONLY + TUNE_ONLY + FLEET_ONLY + GENERATOR_ONLY)]
    assert _undeclared(paths, _declared()) == {}


def test_simulate_kubedouble_and_tests_import_only_their_extras():
    simulate = [p for p in (ROOT / "pyhpa").rglob("*.py") if str(p.relative_to(ROOT)).startswith(SIMULATE_ONLY)]
    assert _undeclared(simulate, _declared("simulate")) == {}
    tune = [p for p in (ROOT / "pyhpa").rglob("*.py") if str(p.relative_to(ROOT)).startswith(TUNE_ONLY + FLEET_ONLY)]
    assert _undeclared(tune, _declared("tune")) == {}
    assert _undeclared((ROOT / "kubedouble").rglob("*.py"), _declared("kubedouble")) == {}
    generator = [p for p in (ROOT / "pyhpa").rglob("*.py") if str(p.relative_to(ROOT)).startswith(GENERATOR_ONLY)]
    assert generator and _undeclared(generator, _declared("kubedouble")) == {}
    tests = [*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py"), *(ROOT / "deploy").rglob("*.py")]
    assert _undeclared(tests, _declared("test")) == {}


def test_declared_dependencies_are_used_and_one_http_client_stack():
    declared = _declared("test")
    imported = set(_third_party_imports([*ROOT.glob("pyhpa/**/*.py"), *ROOT.glob("kubedouble/**/*.py"),
                                         *ROOT.glob("controlplane/**/*.py"), *ROOT.glob("tests/**/*.py"),
                                         *ROOT.glob("benchmarks/**/*.py"), *ROOT.glob("deploy/**/*.py")]))
    dists = packages_distributions()
    used = {d.lower().replace("_", "-") for m in imported for d in dists.get(m, [m])}
    # declared but not imported: libraries used through another one (lightkube's models), pytest plugins
    # (pytest-asyncio, pytest-xdist: pyproject's addopts), the time zone data zoneinfo reads (tzdata) where
    # the system has none, import-linter (its command ``lint-imports``, run by tests/test_layers.py) and ruff (its
    # command ``ruff check``, in the README's test command)
    assert declared - used <= {"lightkube-models", "pytest-asyncio", "pytest-xdist", "pyhpa", "tzdata",
                               "import-linter", "ruff"}, declared - used
    assert "croniter" not in declared and "cronsim" in _declared()
    assert "httpx" not in declared and "httpx" not in imported  # httpx2 (lightkube's client) serves both jobs
    assert {"pandas", "matplotlib"} & _declared() == set()  # only the simulate extra pulls them
    assert {"numpy", "scipy"} <= _declared()  # the forecaster (pyhpa.forecast) runs in `run`
    assert "statsmodels" not in _declared() and "pandas" not in _declared()  # nothing in `run` needs them


@pytest.fixture(scope="module")
def fresh_install(tmp_path_factory):
    """``pip install .`` of a clean copy into a new venv without system site-packages (PyPI reachable)."""
    tmp = tmp_path_factory.mktemp("install")
    src = clean_copy(tmp / "src")
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    py = env_dir / "bin" / "python"
    done = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-compile", str(src)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return env_dir


@pytest.mark.slow
def test_pip_install_without_extras_gives_a_working_controller(fresh_install):
    bin_dir = fresh_install / "bin"
    out = subprocess.run([str(bin_dir / "pyhpa"), "run", "--help"], capture_output=True, text=True, timeout=120,
                         cwd=fresh_install)
    assert out.returncode == 0, out.stderr
    assert "--leader-elect-resource-namespace" in out.stdout
    image = subprocess.run([str(bin_dir / "pyhpa"), "manifests", "--image", "registry.example.com/pyhpa:1"],
                           capture_output=True, text=True, timeout=120, cwd=fresh_install)
    assert image.returncode == 0 and "image: registry.example.com/pyhpa:1" in image.stdout
    probe = subprocess.run([str(bin_dir / "python"), "-c", "import sys, importlib.util as u; "
                            "print([m for m in ('matplotlib', 'pytest', 'kubernetes_validate', 'httpx') if u.find_spec(m)],"
                            " sys.prefix)"], capture_output=True, text=True, timeout=60, cwd=fresh_install)
    assert probe.stdout.split()[0] == "[]", probe.stdout  # no plotting, no test tools in the controller's install
    sim = subprocess.run([str(bin_dir / "pyhpa"), "simulate"], capture_output=True, text=True, timeout=120,
                         cwd=fresh_install)
    assert sim.returncode == 2 and sim.stderr.strip().splitlines() == [
        "error: simulate: pyhpa simulate needs the simulate extra (matplotlib is not installed): "
        "pip install 'pyhpa[simulate]'"], sim.stderr


@pytest.mark.slow
def test_pip_install_also_installs_the_kubectl_plugin(fresh_install):
    plugin = fresh_install / "bin" / "kubectl-pyhpa"
    out = subprocess.run([str(plugin), "--help"], capture_output=True, text=True, timeout=120, cwd=fresh_install)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Usage: kubectl pyhpa ")
    for command in ("explain", "thresholds", "schedules"):
        assert f"  {command} " in out.stdout
