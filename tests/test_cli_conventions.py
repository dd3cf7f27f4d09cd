"""The conventions every ``pyhpa`` command follows (docs/cli.md, issue 20): one-line errors with exit code 2 for
click's own errors too, ``-o/--output`` the output format everywhere, files on ``-dir``/``-file`` flags, one
``--gaps`` set, ``--version``, completion, examples in every ``--help``; ``forecast``'s output paths and short
traces; what ``simulate`` says about its extensions; tables that do not wrap when piped; the plots."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from datetime import timezone
from pathlib import Path

import numpy as np
import pytest
import typer
import yaml
from typer.testing import CliRunner

from pyhpa import __version__
from pyhpa.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()
GROUP = typer.main.get_command(app)


def _commands(group, prefix: tuple = ()) -> dict:
    """Every command of ``group`` by its words (``fleet simulate`` for a command of the group ``fleet``)."""
    out = {}
    for name, command in group.commands.items():
        if hasattr(command, "commands"):  # a group of commands (pyhpa fleet)
            out.update(_commands(command, prefix + (name,)))
        else:
            out[" ".join(prefix + (name,))] = command
    return out


BY_NAME = _commands(GROUP)
COMMANDS = sorted(BY_NAME)


def invoke(*args, **kwargs):
    words = [w for a in args for w in (str(a).split(" ") if a in BY_NAME else [str(a)])]
    return runner.invoke(app, words, **kwargs)


def one_error_line(result) -> str:
    """The single stderr line of a failed command (exit code 2), asserted to be one line without traceback."""
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output and "Usage:" not in result.output
    return lines[0]


# ------------------------------------------------------------------------------------------- click's own errors
@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_option_is_one_line_and_exit_2_on_every_command(command):
    line = one_error_line(invoke(command, "--no-such-flag"))
    assert line.startswith("error: --no-such-flag: no such option") and f"{command} -h" in line


GOLDEN = [
    (["explain", "--bogus"], "error: --bogus: no such option (did you mean --pods?) (see root explain -h)"),
    (["explain", "-o", "yaml", "x.yaml"], "error: --output: 'yaml' is not one of 'text', 'json' (see root explain -h)"),
    (["forecast", "--trace", "t.csv", "--column", "c", "--gaps", "keep"],
     "error: --gaps: 'keep' is not one of 'error', 'hold', 'zero', 'interpolate', 'skip' (see root forecast -h)"),
    (["snapshot", "default/web", "-o", "web.yaml"],
     "error: --output: 'web.yaml' is not one of 'yaml', 'json' (see root snapshot -h)"),
    (["thresholds"], "error: HPA.yaml: missing argument (see root thresholds -h)"),
    (["snapshot"], "error: NAMESPACE/NAME: missing argument (see root snapshot -h)"),
    # a metavar that holds brackets keeps them (issue 60: "FLEET.yaml [B.yaml: missing argument")
    (["fleet", "simulate"], "error: FLEET.yaml [B.yaml]: missing argument (see root fleet simulate -h)"),
    (["no-such-command"], "error: no-such-command: no such command (see root -h)"),
    (["simulate", "--output-dir"], "error: --output-dir: requires an argument"),
]


@pytest.mark.parametrize("args, line", GOLDEN, ids=[" ".join(a) for a, _ in GOLDEN])
def test_click_errors_read_like_every_other_error(args, line):
    assert one_error_line(invoke(*args)) == line


def test_click_errors_from_the_installed_command_name_it():
    done = subprocess.run([sys.executable, "-m", "pyhpa.cli.main", "explain", "--bogus"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "error: --bogus: no such option (did you mean --pods?) (see pyhpa explain -h)\n"


# --------------------------------------------------------------------------------------------------- the flags
def _options(command: str):
    return [p for p in BY_NAME[command].params if p.param_type_name == "option"]


def _choices(p) -> tuple | None:
    """The values a choice option takes (None: not a choice)."""
    desc = p.type_descriptor
    if not desc.is_choice:
        return None
    return tuple(getattr(c, "value", c) for c in desc.choices)


@pytest.mark.parametrize("command", COMMANDS)
def test_output_is_the_format_and_files_have_their_own_flags(command):
    for p in _options(command):
        if "--output" in p.opts:
            assert "-o" in p.opts
            assert set(_choices(p)) <= {"text", "json", "yaml"} and "json" in _choices(p), command
        if "--format" in p.opts:
            assert _choices(p) is not None, f"{command} --format is free text"
        if p.opts[0].endswith("-dir"):
            assert p.metavar == "DIR", (command, p.opts)
        if p.opts[0].endswith("-file"):
            assert p.metavar == "FILE", (command, p.opts)


def test_output_exists_where_commands_print_a_format():
    have = {c for c in COMMANDS if any("--output" in p.opts for p in _options(c))}
    assert {"explain", "thresholds", "schedules", "forecast", "snapshot"} <= have


def test_gaps_has_one_set_of_choices():
    """Every --gaps offers the same choices, in one order; a fleet's (docs/cli.md) the first two of them only: zero,
    interpolate and skip add rows or move time, which a fleet's one clock does not."""
    sets = {c: _choices(p) for c in COMMANDS for p in _options(c) if "--gaps" in p.opts}
    assert set(sets) >= {"simulate", "forecast", "fleet simulate"}
    every = ("error", "hold", "zero", "interpolate", "skip")
    assert {c: s for c, s in sets.items() if not c.startswith("fleet ")} == {c: every for c in sets
                                                                               if not c.startswith("fleet ")}
    assert sets["fleet simulate"] == every[:2]


def test_simulate_output_dir_shows_dir():
    out = invoke("simulate", "-h").output
    assert re.search(r"--output-dir DIR\b", out) and "out/simulate" in out


def test_version():
    r = invoke("--version")
    assert r.exit_code == 0 and r.output == f"pyhpa {__version__}\n"


def test_completion_can_be_installed(tmp_path):
    """``pyhpa --install-completion`` from bash (typer detects the shell from the parent process) installs the
    completion script under HOME and sources it from .bashrc; the script is what bash asks pyhpa for."""
    assert "--install-completion" in invoke("-h").output
    env = {**os.environ, "HOME": str(tmp_path), "SHELL": "/bin/bash"}
    done = subprocess.run(["bash", "-c", f"'{sys.executable}' -m pyhpa.cli.main --install-completion; exit $?"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "_PYHPA_COMPLETE" in (tmp_path / ".bash_completions" / "pyhpa.sh").read_text()
    assert ".bash_completions/pyhpa.sh" in (tmp_path / ".bashrc").read_text()
    script = subprocess.run([sys.executable, "-m", "pyhpa.cli.main"], capture_output=True, text=True, timeout=120,
                            env={**env, "_PYHPA_COMPLETE": "source_bash"}, cwd=ROOT)
    assert script.returncode == 0 and "_pyhpa_completion()" in script.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_help_has_examples_that_name_existing_files(command):
    out = invoke(command, "-h").output
    assert "Examples:" in out
    examples = out.split("Examples:", 1)[1]
    lines = [line.strip() for line in examples.replace("\\\n", " ").splitlines() if line.strip()]
    assert any(line.startswith(f"pyhpa {command}") for line in lines), examples
    for line in lines:
        for token in shlex.split(line.split("#")[0]):
            if re.fullmatch(r"(examples|benchmarks|pyhpa/data)/\S+\.(yaml|json|csv|csv\.gz)", token):
                assert (ROOT / token).exists(), f"{command} -h names a missing file: {token}"
        for m in re.finditer(r"--(?:output-dir|output-file|plot-file)\s+(\S+)", line):
            assert m.group(1).startswith("out/"), line


# ----------------------------------------------------------------------------------------------- pyhpa forecast
@pytest.fixture
def short_trace(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("timestamp,requests_per_second\n0,1\n60,2\n120,3\n")
    return path


def test_forecast_a_three_row_trace_with_the_plot_on(short_trace, tmp_path):
    plot = tmp_path / "p" / "f.png"
    r = invoke("forecast", "--trace", short_trace, "--column", "requests_per_second", "--plot-file", plot)
    assert r.exit_code == 0, r.output
    assert "forecast_rows=0 of 3 (InsufficientHistory 3)" in r.output and f"wrote {plot}" in r.output
    assert plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("name, problem", [
    ("f.txt", "f.txt: --plot-file: unknown file extension '.txt' (want one of "),
    ("plot", "plot: --plot-file: no file extension (want one of "),
])
def test_forecast_refuses_a_plot_file_it_cannot_write_before_any_work(short_trace, tmp_path, monkeypatch, name, problem):
    monkeypatch.chdir(tmp_path)
    line = one_error_line(invoke("forecast", "--trace", short_trace, "--column", "requests_per_second",
                                 "--plot-file", name))
    assert line.startswith(f"error: {problem}") and ".png" in line and ".svg" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]


@pytest.mark.parametrize("given", ["bad", "bad/"])
def test_forecast_refuses_a_folder_as_plot_file(short_trace, tmp_path, monkeypatch, given):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad").mkdir()
    line = one_error_line(invoke("forecast", "--trace", short_trace, "--column", "requests_per_second",
                                 "--plot-file", given))
    assert line == "error: bad: --plot-file: is a folder; give a file name, e.g. bad/forecast.png"
    assert list((tmp_path / "bad").iterdir()) == [] and not (tmp_path / "bad.png").exists()


def test_forecast_json_is_one_line_and_the_old_format_flag_still_works(short_trace):
    new = invoke("forecast", "--trace", short_trace, "--column", "requests_per_second", "--no-plot", "-o", "json")
    old = invoke("forecast", "--trace", short_trace, "--column", "requests_per_second", "--no-plot", "--format",
                 "json")
    assert new.exit_code == 0 and new.output.count("\n") == 1 and new.output == old.output
    assert json.loads(new.output)["rows"] == 3


def test_forecast_plot_labels_scale_and_error_panel():
    from pyhpa.forecast import replay
    from pyhpa.simulate.forecast_plot import axis_label, replay_figure

    t = np.arange(0, 3 * 86400, 300.0)
    v = 50 + 40 * np.sin(2 * np.pi * t / 86400)
    v[v.size - 20] = 400.0  # a peak far above the rest
    v[:50] = 0.0  # near-zero load, where a percentage error would spike
    r = replay(t, v, start=86400.0)
    fig = replay_figure(r, title="t", unit=axis_label("requests_per_second"), tz=timezone.utc, quantile=0.9,
                        lead=300)
    top, bottom = fig.axes[0], fig.axes[1]
    assert top.get_ylabel() == "requests (per second)"
    assert top.get_ylim()[1] >= 400.0
    assert bottom.get_xlabel().startswith("time (UTC")
    assert bottom.get_ylabel() == "WAPE, %" and "WAPE" in bottom.get_lines()[0].get_label()
    assert len(bottom.get_lines()[0].get_xdata()) == r.times.size
    assert axis_label("cpu_usage_percent") == "cpu usage (%)" and axis_label("load", "requests/s") == "load (requests/s)"


# ----------------------------------------------------------------------------------------------- pyhpa simulate
@pytest.fixture(scope="module")
def predictive_run(tmp_path_factory):
    """The issue's case: a predictive HorizontalAutoscaler on a 200-row trace (too little history to predict)."""
    d = tmp_path_factory.mktemp("sim")
    trace = d / "t.csv"
    trace.write_text("timestamp,requests_per_second\n" + "".join(f"{i * 60},{50 + i % 30}\n" for i in range(200)))
    hpa = yaml.safe_load((ROOT / "examples/simulate/ahead/autoscaler.yaml").read_text())
    (d / "hpa.yaml").write_text(yaml.safe_dump(hpa))
    done = subprocess.run([sys.executable, "-m", "pyhpa.cli.main", "simulate", "--hpa", str(d / "hpa.yaml"),
                           "--target", str(ROOT / "benchmarks/proactive/deployment.yaml"),
                           "--profile", str(ROOT / "benchmarks/proactive/profile.yaml"), "--trace", str(trace),
                           "--column", "requests_per_second", "--load-scale", "20", "--no-plot", "--no-progress",
                           "--output-dir", str(d / "out")],
                          capture_output=True, text=True, timeout=300, env={**__import__("os").environ,
                                                                             "COLUMNS": "60"})
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads((d / "out" / "summary.json").read_text())


def test_simulate_table_shows_each_extensions_share_of_syncs(predictive_run):
    out, summary = predictive_run
    ext = summary["extensions"]
    assert set(ext) == {"prediction", "saturation"}
    assert ext["prediction"]["active_syncs"] == 0 and ext["prediction"]["decided_syncs"] == 0
    assert summary["prediction"]["syncs_by_reason"] == {"InsufficientHistory": summary["syncs"]}
    assert ext["saturation"]["decided_syncs"] == summary["syncs_decided_by"].get("Saturation", 0)
    assert sum(summary["syncs_decided_by"].values()) == summary["syncs"]
    row = next(line for line in out.splitlines() if "prediction: predicting, share of syncs" in line)
    assert "0.0 % (0)" in row
    assert any("saturation: decided the replicas, share of syncs" in line for line in out.splitlines())


def test_simulate_warns_when_a_configured_extension_never_acted(predictive_run):
    out, summary = predictive_run
    warnings = [line for line in out.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 + (summary["extensions"]["saturation"]["active_syncs"] == 0)
    assert warnings[0].startswith("warning: hpa: prediction is configured but was never active "
                                  f"(predicting on 0 of {summary['syncs']} syncs): InsufficientHistory on "
                                  f"{summary['syncs']} of {summary['syncs']} syncs")


def test_piped_tables_do_not_wrap(predictive_run):
    """stdout is a pipe (and COLUMNS=60): each row of the table is one line, its label whole."""
    out, _ = predictive_run
    assert any(re.search(r"│ CPU use, true \(mean % of request, all running pods\)\s+│\s+[\d.]+ │", line)
               for line in out.splitlines()), out
    assert max(len(line) for line in out.splitlines() if line.startswith("│")) > 60


# -------------------------------------------------------------------------------------------------- the plots
def test_compare_draws_identical_runs_in_distinct_styles_and_interleaved_targets(tmp_path):
    import matplotlib.pyplot as plt
    from simulate_util import hpa_doc, simulate

    from pyhpa.simulate.plot import compare_figure

    sim = simulate(tmp_path, [(900, 2.0), (900, 8.0)], hpas=[hpa_doc(max_replicas=20), hpa_doc(max_replicas=20)])
    fig = compare_figure(sim)
    try:
        replicas = [line for line in fig.axes[2].get_lines() if "Ready replicas" in line.get_label()]  # after
        # the load and the outcome panels
        assert len(replicas) == 2
        assert list(replicas[0].get_ydata()) == list(replicas[1].get_ydata())  # the same run twice ...
        assert replicas[0].get_linestyle() != replicas[1].get_linestyle()  # ... both visible
        assert replicas[0].get_linewidth() > replicas[1].get_linewidth()
        targets = [line for line in fig.axes[3].get_lines() if "target" in line.get_label()]
        assert len(targets) == 2 and targets[0].get_ydata()[0] == targets[1].get_ydata()[0]
        (off0, dash0), (off1, dash1) = (t._unscaled_dash_pattern for t in targets)
        assert dash0 == dash1 and off0 != off1  # equal targets interleave their dashes
    finally:
        plt.close(fig)


def test_pyhpa_alone_still_shows_the_whole_help():
    done = subprocess.run([sys.executable, "-m", "pyhpa.cli.main"], capture_output=True, text=True, timeout=120)
    out = done.stdout + done.stderr
    assert out.startswith("Usage: pyhpa [OPTIONS] COMMAND") and "\nCommands:\n" in out and "error:" not in out


# ------------------------------------------------------------------------------------- metavars, no args, rules
def test_a_flag_shows_what_it_takes_the_same_in_every_command():
    """(issue 29) --kubeconfig FILE, times as TIME, URLs as URL, seconds as SECONDS, in every command and the plugin."""
    from pyhpa.cli.help import FLAG_METAVARS
    from pyhpa.cli.kubectl_plugin import plugin

    seen: dict[str, set] = {}
    for group in (GROUP, typer.main.get_command(plugin)):
        for cmd in group.commands.values():
            for p in cmd.params:
                flag = max(getattr(p, "opts", [""]), key=len)
                if p.param_type_name == "option" and p.metavar and not p.metavar.startswith("["):  # not choices
                    seen.setdefault(flag, set()).add(p.metavar)
    for flag, metavars in seen.items():
        assert len(metavars) == 1, (flag, metavars)
        if flag in FLAG_METAVARS:
            assert metavars == {FLAG_METAVARS[flag]}, flag
    for flag in ("--kubeconfig", "--now", "--from", "--start", "--server", "--sync-period", "--prometheus-url"):
        assert "TEXT" not in seen[flag] and "NUMBER" not in seen[flag], flag


@pytest.mark.parametrize("binary", ["pyhpa", "kubectl-pyhpa"])
def test_no_arguments_print_the_commands_and_exit_0(binary):
    module = {"pyhpa": "pyhpa.cli.main", "kubectl-pyhpa": "pyhpa.cli.kubectl_plugin"}[binary]
    r = subprocess.run([sys.executable, "-m", module], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0 and r.stderr == ""
    assert "Commands:" in r.stdout and "explain" in r.stdout


def test_piped_explain_draws_a_rule_of_80_columns():
    r = subprocess.run([sys.executable, "-m", "pyhpa.cli.main", "explain", "examples/explain/snapshot.yaml"],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    first = r.stdout.splitlines()[0]
    assert r.returncode == 0 and first.startswith("──") and len(first) == 80 and "php-apache-scale-up" in first


# ----------------------------------------------------------------------------------- python -m controlplane
# (issue 37) The control plane's command line follows the same conventions as pyhpa and kubectl pyhpa: one app
# factory (pyhpa.cli.help.typer_app), plain help ending with examples, -h, click's errors as one line. In process:
# nothing here builds or starts the control plane.
def _apps():
    from controlplane.__main__ import app as controlplane_app
    from pyhpa.cli.kubectl_plugin import plugin

    return {"pyhpa": app, "kubectl pyhpa": plugin, "python -m controlplane": controlplane_app}


@pytest.mark.parametrize("name", ["pyhpa", "kubectl pyhpa", "python -m controlplane"])
def test_every_command_line_is_built_the_same_way(name):
    from pyhpa.cli.help import CONTEXT_SETTINGS, Command, Group

    typer_app = _apps()[name]
    assert typer_app.rich_markup_mode is None and typer_app.pretty_exceptions_show_locals is False
    group = typer.main.get_command(typer_app)
    assert isinstance(group, Group) and group.context_settings == CONTEXT_SETTINGS
    groups = [group]
    while groups:
        for command in groups.pop().commands.values():
            if isinstance(command, Group):  # a group of commands (pyhpa fleet): built the same way, and its commands
                assert command.context_settings == CONTEXT_SETTINGS and "Examples:" in command.epilog, command.name
                groups.append(command)
                continue
            assert isinstance(command, Command) and "Examples:" in command.epilog, command.name


@pytest.mark.parametrize("args", [[], ["-h"], ["build", "-h"], ["up", "-h"], ["version", "--help"]])
def test_controlplane_help_is_plain_and_ends_with_its_examples(args):
    out = CliRunner().invoke(_apps()["python -m controlplane"], args, prog_name="python -m controlplane")
    assert out.exit_code == 0, out.output
    assert "╭" not in out.output and "<bool>" not in out.output  # typer's boxes and type metavars: pyhpa has neither
    assert out.output.startswith("Usage: python -m controlplane")
    examples = out.output.split("Examples:\n", 1)[1].splitlines()
    command = next((a for a in args if not a.startswith("-")), "")
    assert examples and all(line.startswith(f"    python -m controlplane {command}".rstrip()) for line in examples)
    assert all(len(line.strip()) <= 76 for line in examples)
    if command == "up":
        assert "--home DIR" in out.output and "--controllers LIST" in out.output


@pytest.mark.parametrize("args, line", [
    (["up", "--bogus"], "error: --bogus: no such option (see python -m controlplane up -h)"),
    (["nope"], "error: nope: no such command (see python -m controlplane -h)"),
])
def test_controlplane_usage_errors_are_one_line(args, line):
    r = CliRunner().invoke(_apps()["python -m controlplane"], args, prog_name="python -m controlplane")
    assert one_error_line(r) == line
