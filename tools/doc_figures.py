#!/usr/bin/env python3
"""Regenerate or check the figures the docs quote (docs/tools.md#doc-figures).

    python3 tools/doc_figures.py --check  [--fast] [--only NAME ...] [--build DIR] [--root DIR]
    python3 tools/doc_figures.py --update [--fast] [--only NAME ...] [--build DIR] [--root DIR]
    python3 tools/doc_figures.py --list   [--fast]

A figure in README.md or docs/**/*.md is marked

    <!-- fig:NAME -->VALUE<!-- /fig -->

and NAME is registered in tools/doc_figures.json with the command that reproduces it, how to read
the value from what the command printed (a regular expression with one group) or from a trace it
wrote (an SQL query whose first row's first column is the value), how to format it, and whether it
is fast (a few seconds; `--fast` runs only those). Commands run from the repository root with the
build directory substituted for {build} (default ROOT/build) and a fresh temporary directory for
{tmp}; each distinct command runs once however many figures read it.

--check re-measures the figures and exits 1 naming every marked value that differs from the
measured one: exactly for deterministic figures (simulated times, event counts, bytes), within the
registry's relative tolerance for figures that vary with the machine (wall time, peak memory);
figures registered "checkable": false (a wall-clock ratio) are measured only by --update.
--update writes the measured values into the docs. Bad input -- an unknown or unregistered figure
in a doc, a malformed registry or marker, a command that fails or prints nothing the expression
matches -- is reported on stderr with exit 2. Python 3 standard library only.
"""
import argparse
import glob
import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

MARK = re.compile(r"<!-- fig:([A-Za-z0-9_.-]+) -->(.*?)<!-- /fig -->")
OPEN = re.compile(r"<!-- fig:")
FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
CODESPAN = re.compile(r"(`+)(.+?)\1")
REGISTRY = os.path.join("tools", "doc_figures.json")
KEYS = {"command", "regex", "sql", "measure", "format", "scale", "thousands", "fast", "exit",
        "tolerance", "checkable", "repeat", "env", "timeout", "note"}
MEASURES = {"wall_s", "cpu_s", "max_rss_mib"}


class BadInput(Exception):
    pass


def load_registry(path):
    try:
        with open(path, encoding="utf-8") as f:
            reg = json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}")
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not JSON: {e}")
    if not isinstance(reg, dict) or reg.get("format") != "hcsim-doc-figures" or reg.get("version") != 1:
        raise BadInput(f'{path}: expected an object with "format": "hcsim-doc-figures", "version": 1')
    figs = reg.get("figures")
    if not isinstance(figs, dict) or not figs:
        raise BadInput(f'{path}: /figures: expected an object of figures')
    for name, fig in figs.items():
        where = f"{path}: /figures/{name}"
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise BadInput(f"{where}: a name is letters, digits, '_', '.', '-'")
        if not isinstance(fig, dict):
            raise BadInput(f"{where}: expected an object")
        unknown = set(fig) - KEYS
        if unknown:
            raise BadInput(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        if not isinstance(fig.get("command"), str) or not fig["command"].strip():
            raise BadInput(f"{where}/command: expected the command line (a string)")
        try:
            shlex.split(fig["command"])
        except ValueError as e:
            raise BadInput(f"{where}/command: {e}")
        ways = [k for k in ("regex", "sql", "measure") if k in fig]
        if len(ways) != 1:
            raise BadInput(f"{where}: expected exactly one of regex, sql, measure")
        if "regex" in fig:
            try:
                rx = re.compile(fig["regex"], re.M)
            except (re.error, TypeError) as e:
                raise BadInput(f"{where}/regex: {e}")
            if rx.groups != 1:
                raise BadInput(f"{where}/regex: expected exactly one group, found {rx.groups}")
        if "sql" in fig and (not isinstance(fig["sql"], list) or len(fig["sql"]) != 2
                             or not all(isinstance(s, str) for s in fig["sql"])):
            raise BadInput(f'{where}/sql: expected ["TRACE FILE (with {{tmp}})", "SELECT ..."]')
        if "measure" in fig and fig["measure"] not in MEASURES:
            raise BadInput(f"{where}/measure: expected one of {', '.join(sorted(MEASURES))}")
        fmt = fig.get("format", "{}")
        if not isinstance(fmt, str):
            raise BadInput(f"{where}/format: expected a format string such as \"{{:.3f}}\"")
        try:
            render(fig, 1.0)
        except (ValueError, IndexError, KeyError, TypeError) as e:
            raise BadInput(f"{where}/format: {e}")
        for key, typ in (("scale", (int, float)), ("tolerance", (int, float)), ("fast", bool),
                         ("checkable", bool), ("thousands", str), ("repeat", int), ("timeout", (int, float)),
                         ("env", dict), ("note", str)):
            if key in fig and (not isinstance(fig[key], typ) or isinstance(fig[key], bool) != (typ is bool)):
                raise BadInput(f"{where}/{key}: wrong type")
        if "exit" in fig:
            ex = fig["exit"] if isinstance(fig["exit"], list) else [fig["exit"]]
            if not ex or not all(isinstance(e, int) and not isinstance(e, bool) for e in ex):
                raise BadInput(f"{where}/exit: expected an exit code or a list of them")
        if "measure" in fig and "tolerance" not in fig and fig.get("checkable", True):
            raise BadInput(f"{where}: a machine-dependent measure needs a tolerance or \"checkable\": false")
    return figs


def doc_files(root):
    files = [os.path.join(root, "README.md")]
    files += sorted(glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True))
    return [f for f in files if os.path.isfile(f)]


def scan_docs(root, figs):
    """Returns {file: text} and the list of (file, line, name, value) marks."""
    texts, marks = {}, []
    for path in doc_files(root):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        texts[path] = text
        fence = None
        for n, line in enumerate(text.split("\n"), 1):
            f = FENCE.match(line)
            if fence is None and f:
                fence = f.group(1)
                continue
            if fence is not None:
                if line.strip().startswith(fence) and set(line.strip()) <= set(fence[0]):
                    fence = None
                continue
            line = CODESPAN.sub(lambda m: " " * len(m.group(0)), line)  # a marker in `code` is an example
            found = list(MARK.finditer(line))
            if len(OPEN.findall(line)) != len(found):
                raise BadInput(f"{os.path.relpath(path, root)}:{n}: a figure marker without its "
                               "<!-- /fig --> on the same line")
            for m in found:
                if m.group(1) not in figs:
                    raise BadInput(f"{os.path.relpath(path, root)}:{n}: figure {m.group(1)} is not in {REGISTRY}")
                marks.append((path, n, m.group(1), m.group(2)))
    return texts, marks


def render(fig, value):
    v = value * fig.get("scale", 1)
    fmt = fig.get("format", "{}")
    if re.search(r"\{:[^}]*d\}", fmt):
        v = int(round(v))
    s = fmt.format(v)
    if "thousands" in fig:
        s = s.replace(",", fig["thousands"])
    return s


def parse_number(text, thousands=None):
    t = text.strip()
    if thousands:
        t = t.replace(thousands, "")
    t = t.replace(",", "")
    return float(t)


class Runner:
    def __init__(self, root, build, verbose):
        self.root, self.build, self.verbose = root, build, verbose
        self.cache = {}
        self.tmp = tempfile.mkdtemp(prefix="doc_figures.")

    def expand(self, s):
        return s.replace("{build}", self.build).replace("{tmp}", self.tmp)

    def run(self, name, fig):
        cmd = self.expand(fig["command"])
        key = (cmd, json.dumps(fig.get("env", {}), sort_keys=True), fig.get("repeat", 1))
        if key in self.cache:
            return self.cache[key]
        argv = shlex.split(cmd)
        exe = argv[0]
        if os.sep in exe and not os.path.isfile(os.path.join(self.root, exe) if not os.path.isabs(exe) else exe):
            raise BadInput(f"figure {name}: {exe}: no such program (build it first, or give --build)")
        env = dict(os.environ)
        env.update({k: str(v) for k, v in fig.get("env", {}).items()})
        ok = fig.get("exit", 0)
        ok = ok if isinstance(ok, list) else [ok]
        runs = []
        for _ in range(fig.get("repeat", 1)):
            if self.verbose:
                print(f"doc_figures: running {cmd}", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            try:
                p = subprocess.Popen(argv, cwd=self.root, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
            except OSError as e:
                raise BadInput(f"figure {name}: cannot run {argv[0]}: {e.strerror}")
            limit = fig.get("timeout", 3600)
            timer = threading.Timer(limit, p.kill)
            timer.start()
            try:
                out = p.stdout.read().decode("utf-8", "replace")
                p.stdout.close()
                _, status, usage = os.wait4(p.pid, 0)  # this child's own peak RSS
            finally:
                timer.cancel()
            p.returncode = os.waitstatus_to_exitcode(status)
            wall = time.monotonic() - t0
            if wall >= limit:
                raise BadInput(f"figure {name}: {cmd}: killed after {limit} s")
            rss_kib = usage.ru_maxrss
            cpu = usage.ru_utime + usage.ru_stime
            if p.returncode not in ok:
                tail = "\n".join(out.rstrip().split("\n")[-5:])
                raise BadInput(f"figure {name}: {cmd}: exit {p.returncode} (expected {ok}):\n{tail}")
            runs.append((out, wall, rss_kib, cpu))
        runs.sort(key=lambda r: r[1])
        result = runs[len(runs) // 2]  # the median run by wall time
        self.cache[key] = result
        return result

    def measure(self, name, fig):
        out, wall, rss_kib, cpu = self.run(name, fig)
        if "regex" in fig:
            m = re.search(fig["regex"], out, re.M)
            if not m:
                raise BadInput(f"figure {name}: /{fig['regex']}/ matches nothing in the output of "
                               f"{self.expand(fig['command'])}")
            try:
                return parse_number(m.group(1))
            except ValueError:
                raise BadInput(f"figure {name}: /{fig['regex']}/ matched {m.group(1)!r}, not a number")
        if "sql" in fig:
            db = os.path.join(self.root, self.expand(fig["sql"][0]))
            if not os.path.isfile(db):
                raise BadInput(f"figure {name}: the command wrote no trace {db}")
            try:
                con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                row = con.execute(fig["sql"][1]).fetchone()
                con.close()
            except sqlite3.Error as e:
                raise BadInput(f"figure {name}: SQL on {db}: {e}")
            if not row or row[0] is None:
                raise BadInput(f"figure {name}: the query returned no value")
            try:
                return float(row[0])
            except (TypeError, ValueError):
                raise BadInput(f"figure {name}: the query returned {row[0]!r}, not a number")
        if fig["measure"] == "wall_s":
            return wall
        if fig["measure"] == "cpu_s":
            return cpu
        return rss_kib / 1024.0


def matches(fig, doc_value, measured):
    if doc_value == measured:
        return True
    if "tolerance" not in fig:
        return False
    try:
        d = parse_number(doc_value, fig.get("thousands"))
        m = parse_number(measured, fig.get("thousands"))
    except ValueError:
        return False
    return abs(d - m) <= fig["tolerance"] * abs(m)


def main(argv):
    ap = argparse.ArgumentParser(description="Check or regenerate the figures the docs quote.")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="re-measure and compare (exit 1 on a difference)")
    mode.add_argument("--update", action="store_true", help="re-measure and rewrite the docs' values")
    mode.add_argument("--list", action="store_true", help="list the registered figures and where they are quoted")
    ap.add_argument("--fast", action="store_true", help="only the figures marked fast")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these figures")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="the repository (default: the one this script is in)")
    ap.add_argument("--build", help="the build directory with tools/hcsim (default: ROOT/build)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each command as it runs")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    root = os.path.abspath(args.root)
    build = os.path.abspath(args.build) if args.build else os.path.join(root, "build")
    try:
        figs = load_registry(os.path.join(root, REGISTRY))
        texts, marks = scan_docs(root, figs)
        selected = set(figs)
        if args.only:
            unknown = [n for n in args.only if n not in figs]
            if unknown:
                raise BadInput(f"unknown figure(s): {', '.join(unknown)} (not in {REGISTRY})")
            selected = set(args.only)
        if args.fast:
            selected = {n for n in selected if figs[n].get("fast", False)}
        quoted = {}
        for path, line, name, value in marks:
            quoted.setdefault(name, []).append((path, line, value))
        if args.list:
            for name in sorted(selected):
                where = ", ".join(f"{os.path.relpath(p, root)}:{n}" for p, n, _ in quoted.get(name, [])) or "not quoted"
                kind = "fast" if figs[name].get("fast") else "slow"
                print(f"{name} [{kind}] {figs[name]['command']}  ({where})")
            return 0
        for name in sorted(selected - set(quoted)):
            print(f"doc_figures: warning: figure {name} is registered but quoted in no doc", file=sys.stderr)
        runner = Runner(root, build, args.verbose)
        todo = sorted((n for n in selected if n in quoted), key=lambda n: (figs[n]["command"], n))
        if args.check:
            todo = [n for n in todo if figs[n].get("checkable", True)]
        measured = {}
        t0 = time.monotonic()
        for name in todo:
            measured[name] = render(figs[name], runner.measure(name, figs[name]))
    except BadInput as e:
        print(f"doc_figures: {e}", file=sys.stderr)
        return 2
    if args.check:
        bad = 0
        for name in todo:
            for path, line, value in quoted[name]:
                if matches(figs[name], value, measured[name]):
                    continue
                bad += 1
                tol = f" (tolerance {figs[name]['tolerance']:.0%})" if "tolerance" in figs[name] else ""
                print(f"{os.path.relpath(path, root)}:{line}: figure {name}: the doc says {value}, "
                      f"measured {measured[name]}{tol}")
        runs = len(runner.cache)
        print(f"doc_figures: {len(todo) - 0} figures from {runs} commands in {time.monotonic() - t0:.1f} s: "
              + ("all match" if not bad else f"{bad} differ"))
        return 1 if bad else 0
    changed = 0
    for path, text in texts.items():
        def put(m):
            name = m.group(1)
            if name not in measured:
                return m.group(0)
            return f"<!-- fig:{name} -->{measured[name]}<!-- /fig -->"
        new = MARK.sub(put, text)
        if new != text:
            changed += 1
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    for name in todo:
        old = {v for _, _, v in quoted[name]}
        if old != {measured[name]}:
            print(f"figure {name}: {', '.join(sorted(old))} -> {measured[name]}")
    print(f"doc_figures: {len(todo)} figures measured, {changed} files rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
