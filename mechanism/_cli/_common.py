"""Arguments and input handling that every analysis command shares."""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import json
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from mechanism.core.cachefile import atomic_path
from mechanism.core.errors import InputError, OutputError, ReadWarning
from mechanism.core.names import display_name, escape_control, visible_name
from mechanism.core.options import check_seed
from mechanism.core.schema import count_shared, refuse_few_shared
from mechanism.plots.background import saving_in_background
from mechanism.readers import FORMATS, SCORERS, read
from mechanism.report.digests import COMPLETE_MARKER


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """INPUT..., ``--format``, ``--arm``, ``--errors`` and ``--columns``, as ``mechanism read`` takes them."""
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="trajectory files or folders")
    parser.add_argument("--format", default="auto", choices=("auto", *FORMATS),
                        help="input format (default: detect per file)")
    parser.add_argument("--arm", default=None, help="arm name for files that have none")
    parser.add_argument("--errors", default="raise", choices=("raise", "skip"),
                        help="stop at the first bad record (raise, default) or skip and report bad records")
    add_reading_options(parser)


def add_reading_options(parser: argparse.ArgumentParser) -> None:
    """The reader's options that replace preparation code (``mechanism.read``'s keywords)."""
    parser.add_argument("--columns", action="append", default=[], metavar="CANONICAL=FIELD[,...]",
                        help="map canonical names to the file's fields (repeatable, or comma-separated), "
                             "e.g. --columns text=response,gold=golden_answers; a text label maps with "
                             "correct=status:CORRECT")
    parser.add_argument("--where", default=None, metavar="FILTER",
                        help="keep only records for which this holds, on the file's own fields, e.g. "
                             "\"trial == 1 and not carried_over\" (SQL syntax)")
    parser.add_argument("--answer-pattern", default=None, metavar="REGEX",
                        help="regular expression for the final answer in the last message (group 1 if any)")
    parser.add_argument("--scorer", default="em", choices=SCORERS,
                        help="how answers are scored where the file gives no label (default em: exact match)")
    parser.add_argument("--unanswered", default="fail", choices=("fail", "error"),
                        help="an episode without a final answer: a failure (default) or a bad record")
    parser.add_argument("--round-tools", default=None, metavar="TOOLS",
                        help="tools that count as rounds, comma-separated (search,lookup), or the ones that "
                             "do not, prefixed with - (--round-tools=-reflect,-think)")
    parser.add_argument("--error-pattern", default=None, metavar="REGEX",
                        help="your environment's failure messages (case-insensitive regular expression): a "
                             "matching observation is a failed call, besides the default reading")
    parser.add_argument("--multi-action", default="first", choices=("first", "last"),
                        help="a ReAct turn with several actions: the environment ran the first (default) or "
                             "the last")
    parser.add_argument("--duplicates", default="keep", choices=("keep", "drop"),
                        help="episodes repeated exactly within arm and question (no sample id): kept and "
                             "counted (default) or left out")
    parser.add_argument("--question-key", default=None, metavar="text|REGEX",
                        help="question ids from the question text: 'text' (normalised) or a regular "
                             "expression whose group 1 is the question proper (logs that prefix questions)")


def add_embedding_arguments(parser: argparse.ArgumentParser) -> None:
    """``--cache-dir`` and ``--no-progress``, for every command that embeds trajectories."""
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="embedding and segmentation cache folder (reused across calls)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def progress_flag(args: argparse.Namespace) -> bool | None:
    """``False`` under ``--no-progress``, else ``None`` (bars only when stderr is a terminal)."""
    return False if getattr(args, "no_progress", False) else None


def parse_columns(items: list[str]) -> dict[str, str]:
    """``--columns`` entries (``canonical=field``, comma-separated or repeated) as a dict."""
    out = {}
    for item in (part for entry in items for part in entry.split(",") if part.strip()):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InputError(f"`--columns` entries look like canonical=field, got {item!r}", field="columns")
        out[key.strip()] = value.strip()
    return out


def reading_kwargs(args: argparse.Namespace) -> dict:
    """The keyword arguments of :func:`mechanism.read` that the reading options give."""
    columns = parse_columns(getattr(args, "columns", None) or [])
    return {"columns": columns or None, "where": getattr(args, "where", None),
            "answer_pattern": getattr(args, "answer_pattern", None), "scorer": getattr(args, "scorer", "em"),
            "unanswered": getattr(args, "unanswered", "fail"), "round_tools": getattr(args, "round_tools", None),
            "error_pattern": getattr(args, "error_pattern", None),
            "multi_action": getattr(args, "multi_action", "first"),
            "duplicates": getattr(args, "duplicates", "keep"), "question_key": getattr(args, "question_key", None)}


def read_quietly(inputs, **kwargs):
    """:func:`mechanism.read` with its :class:`ReadWarning` messages kept in the report only: the
    command prints them itself, on one escaped line each."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReadWarning)
        return read(inputs, report=True, **kwargs)


def _seed(text: str) -> int:
    """``--seed``: the range :func:`mechanism.core.options.check_seed` gives every ``random_state``
    (a non-negative int of any size), so the flag and the library accept the same seeds."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    try:
        return check_seed(value, field="--seed")
    except InputError:
        raise argparse.ArgumentTypeError(f"must be a non-negative whole number, got {value}") from None


def add_output_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=Path, help="output folder (created if missing)")


def add_bootstrap_arguments(parser: argparse.ArgumentParser) -> None:
    """``--ci``, ``--n-boot``, ``--seed`` and ``--no-figures``."""
    parser.add_argument("--ci", type=float, default=0.95, help="bootstrap interval level (default 0.95)")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates over questions (default 1000)")
    parser.add_argument("--seed", type=_seed, default=0, help="seed of every resampling (default 0)")
    parser.add_argument("--no-figures", action="store_true", help="write tables only")


def read_inputs(args: argparse.Namespace) -> pl.DataFrame:
    """Read the command's inputs; under ``--errors skip`` say on stderr what was left out (once
    the command has succeeded: see :func:`defer`)."""
    runs, report = read_quietly(args.inputs, format=args.format, arm=args.arm, errors=args.errors,
                                progress=progress_flag(args), **reading_kwargs(args))
    for line in report_lines(report):
        defer(args, line)
    return runs


def report_lines(report) -> list[str]:
    """What a read left out and warned about, as escaped lines for stderr."""
    lines = []
    if report.skipped_files:
        lines.append(f"skipped {len(report.skipped_files)} input{'s' if len(report.skipped_files) > 1 else ''} "
                     "with no records to read:")
        lines.extend(terminal_safe(f"  {entry}") for entry in report.skipped_files[:10])
        if len(report.skipped_files) > 10:
            lines.append(f"  ... and {len(report.skipped_files) - 10} more")
    if report.skipped:
        lines.append(f"skipped {len(report.skipped)} of {report.rows_in} records:")
        lines.extend(terminal_safe(f"  {record}") for record in report.skipped[:10])
        if len(report.skipped) > 10:
            lines.append(f"  ... and {len(report.skipped) - 10} more")
    for message in report.warnings:
        lines.append(terminal_safe(f"warning: {' '.join(message.split())}"))
    return lines


def defer(args: argparse.Namespace, line: str) -> None:
    """A line for stderr that is printed only if the command succeeds: a failing command prints
    its one error line and nothing else. Outside :func:`mechanism._cli.main.main` it is printed now."""
    pending = getattr(args, "_pending", None)
    if pending is None:
        print(line, file=sys.stderr)
    else:
        pending.append(line)


def progress_line(args: argparse.Namespace, line: str) -> None:
    """A progress line (a stage done): shown at once on a terminal, where a person watches a long
    run; elsewhere (a log, a script) held like :func:`defer`, so a failure is one line."""
    if sys.stderr.isatty():
        print(line, file=sys.stderr)
    else:
        defer(args, line)


def require_two_arms(runs: pl.DataFrame, command: str, *, hint: str = "`mechanism report` analyses one agent") -> None:
    """Stop a comparison of arms whose input holds fewer than two, with one line saying what is
    needed (the CLI prints it and exits 2)."""
    arms = runs["arm"].unique(maintain_order=True).to_list() if "arm" in runs.columns else []
    if len(arms) >= 2:
        return
    found = f"one arm ({display_name(visible_name(arms[0]), max_length=60, mathtext=False)!r})" if arms else "no arm"
    raise InputError(f"`mechanism {command}` compares arms, and the input holds {found}: give trajectories of at "
                     f"least two arms (one file per arm, or --arm per input); {hint}",
                     field="arm")


def terminal_safe(text: str) -> str:
    """``text`` as :func:`mechanism.core.names.escape_control` shows it, with the report's own
    newlines and tabs kept: arm names, answers and queries come from the input, and an
    escape sequence, a bidirectional override or a zero-width character planted there must
    not reach the terminal. The same rule draws names in figures, so a name reads the same
    in both."""
    return escape_control(text, keep="\n\t")


def option_flags(parser: argparse.ArgumentParser) -> dict[str, tuple[str, object]]:
    """Each option's destination (the library parameter it becomes) -> its flag and default."""
    flags = {}
    for action in parser._actions:  # argparse's documented parsers expose no public list of actions
        long = [o for o in action.option_strings if o.startswith("--")]
        if long and action.dest != "help":
            flags[action.dest] = (long[0], action.default)
    return flags


def cli_message(exc: BaseException, args: argparse.Namespace) -> str:
    """The library's error as the command line says it.

    Library errors name the library's parameters (``field``, in backticks); where the error
    is about an option (no file, no line) that the user gave as a flag of this command, the
    message names the flag instead: "`base` arm 'x' is not in the input" reads
    "`--base` arm 'x' is not in the input".
    """
    text = str(exc)
    field = getattr(exc, "field", None)
    flags = getattr(args, "_flags", None) or {}
    if (isinstance(exc, InputError) and exc.source is None and exc.line is None and field in flags
            and getattr(args, field, None) != flags[field][1]):
        text = text.replace(f"`{field}`", f"`{flags[field][0]}`")
    return text


# ---------------------------------------------------------------- atomic outputs
# A command's output folder appears whole or not at all: everything is written into a hidden
# folder beside --out, which is renamed into place when the command has finished. A run that is
# killed, or stops on a full disk, leaves the previous output (or nothing) at --out, never a mix
# of old and new files that looks complete. COMPLETE_MARKER, written last, lists what a finished
# run wrote; a folder without it was not written by a finished run.
_PARTIAL = ".partial-"
_OLD = ".old-"


def is_complete(folder: Path) -> bool:
    """Whether ``folder`` holds a finished command's output: the marker is there and every file
    it lists is there with the size it lists."""
    try:
        listed = json.loads((Path(folder) / COMPLETE_MARKER).read_text("utf-8"))["files"]
        return all((Path(folder) / rel).is_file() and (Path(folder) / rel).stat().st_size == size
                   for rel, size in listed.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _hidden_name(out: Path, kind: str) -> str:
    # the folder's own name is cut so the hidden name stays under the 255 bytes of a file name
    stem = out.name.encode("utf-8")[:100].decode("utf-8", "ignore")
    return f".{stem}{kind}{os.getpid()}-"


def _sweep_stale(out: Path) -> None:
    """Tidy the hidden folders that killed runs left beside ``out`` (their process is gone).

    A swap killed midway never costs an output: where ``out`` is missing, the previous output
    set aside (``.old-*``) is put back, else a finished new output (``.partial-*`` with its
    marker whole); where ``out`` is there, files of the user's own that were still in a hidden
    folder join it. Everything else of a dead run is removed.
    """
    prefix = f".{out.name.encode('utf-8')[:100].decode('utf-8', 'ignore')}"
    try:
        entries = list(out.parent.iterdir())
    except OSError:
        return
    stale = []
    for entry in entries:
        rest = entry.name[len(prefix):] if entry.name.startswith(prefix) else ""
        for rank, kind in enumerate((_OLD, _PARTIAL)):
            if rest.startswith(kind):
                pid = rest[len(kind):].split("-")[0]
                if pid.isdigit() and not _alive(int(pid)):
                    stale.append((rank, entry.name, entry, kind))
    for _, _, entry, kind in sorted(stale):  # the old output first: it is what --out held
        held = entry / "old" if kind == _OLD else entry
        with contextlib.suppress(OSError):
            listed = _listed(held) if held.is_dir() and not held.is_symlink() else None
            if listed is not None and not os.path.lexists(out) and (kind == _OLD or is_complete(held)):
                os.rename(held, out)
            elif listed is not None and out.is_dir() and _listed(out) is not None:
                _carry(held, out, listed)
        shutil.rmtree(entry, ignore_errors=True)


def _carry(old: Path, out: Path, listed: set[str]) -> None:
    """Move the entries of ``old`` that its run did not write (the user's own) into ``out``,
    where ``out`` has none of that name."""
    for entry in list(old.iterdir()):
        if entry.name not in listed and not os.path.lexists(out / entry.name):
            _swap_step(f"carry {entry.name}")
            os.rename(entry, out / entry.name)


def _swap_step(step: str) -> None:
    """Called before each step of the output swap. Does nothing: tests replace it to kill the
    process at that step and check that an output survives every one."""


_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap the folders ``a`` and ``b`` in one step (Linux ``renameat2(RENAME_EXCHANGE)``), so
    that neither path is missing at any moment; ``False`` where the system or the file system
    cannot (another OS, an old C library or kernel, a file system without it)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # glibc before 2.28, musl
        return False
    renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    renameat2.restype = ctypes.c_int
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _write_marker(tmp: Path) -> None:
    files = {p.relative_to(tmp).as_posix(): p.stat().st_size for p in sorted(tmp.rglob("*"))
             if p.is_file() and p.name != COMPLETE_MARKER}
    data = json.dumps({"format": "mechanism.output", "files": files}, indent=1, ensure_ascii=False)
    (tmp / COMPLETE_MARKER).write_text(data, encoding="utf-8")


def _listed(folder: Path) -> set[str] | None:
    """The top-level names a finished run wrote in ``folder``, ``None`` without a marker."""
    try:
        files = json.loads((folder / COMPLETE_MARKER).read_text("utf-8"))["files"]
        return {rel.split("/")[0] for rel in files} | {COMPLETE_MARKER}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _finish(tmp: Path, out: Path) -> None:
    """Move the finished output ``tmp`` to ``out``."""
    _swap_step("marker")
    _write_marker(tmp)
    if not os.path.lexists(out):
        _swap_step("move in")
        os.rename(tmp, out)
        return
    if not out.is_dir():
        raise OutputError(f"`--out` {str(out)!r} exists and is not a folder")
    ours = _listed(out)
    if not any(out.iterdir()):
        os.rmdir(out)
        os.rename(tmp, out)
        return
    if ours is not None:
        # the previous finished run: swapped out whole, so --out is at every moment the old
        # output or the new one (in one step where the system can exchange two folders; else
        # by two renames, whose gap a later run heals by putting the old output back); files a
        # user added beside it are carried over
        aside = Path(tempfile.mkdtemp(dir=out.parent, prefix=_hidden_name(out, _OLD)))
        _swap_step("exchange")
        if _exchange(tmp, out):
            _swap_step("set aside")
            os.rename(tmp, aside / "old")  # tmp now holds the old output
        else:
            _swap_step("set aside")
            os.rename(out, aside / "old")
            _swap_step("move in")
            os.rename(tmp, out)
        _carry(aside / "old", out, ours)
        _swap_step("remove old")
        shutil.rmtree(aside, ignore_errors=True)
        return
    # a folder of the user's own (or a cache we put there): the new files join it one by one,
    # the marker last, so until the end it does not read as a finished output
    for path in sorted(tmp.rglob("*"), key=lambda p: (p.name.startswith("summary"), p.as_posix())):
        if path.is_file() and path.name != COMPLETE_MARKER:  # the summaries last
            target = out / path.relative_to(tmp)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
    os.replace(tmp / COMPLETE_MARKER, out / COMPLETE_MARKER)
    shutil.rmtree(tmp, ignore_errors=True)


def _output_error(exc: OSError, tmp: Path, out: Path) -> OutputError:
    """A one-line error naming the path that failed (the final one, not the hidden folder's)."""
    where = str(out)
    if exc.filename is not None:
        name = str(exc.filename)
        where = name.replace(str(tmp), str(out), 1) if name.startswith(str(tmp)) else name
    what = " ".join(str(exc.strerror or exc).split()).lower() or type(exc).__name__
    return OutputError(f"cannot write {' '.join(where.split())!r} ({what}): nothing was written to "
                       f"{' '.join(str(out).split())!r}")


@contextlib.contextmanager
def atomic_output(out: Path) -> Iterator[Path]:
    """A folder to write a command's output into, renamed to ``out`` when the block finishes.

    The hidden folder sits beside ``out`` (same file system, so the rename is atomic). An
    exception removes it and leaves ``out`` as it was; a killed process leaves it hidden,
    removed by the next run. An :class:`OSError` while writing (a full disk, no permission)
    becomes one :class:`~mechanism.core.errors.OutputError` naming the path.

    Yields
    ------
    pathlib.Path
        The folder to write into.
    """
    out = Path(os.path.abspath(out))
    if os.path.lexists(out) and not out.is_dir():
        raise OutputError(f"`--out` {str(out)!r} exists and is not a folder")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        _sweep_stale(out)
        tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=_hidden_name(out, _PARTIAL)))
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp's folder is private; the output is not
    except OSError as exc:
        raise _output_error(exc, out, out) from None
    try:
        with saving_in_background():  # figures saved by workers meanwhile, all on disk before the rename
            yield tmp
        _finish(tmp, out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise _output_error(exc, tmp, out) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path``, moved onto it (``os.replace``) when the block finishes;
    removed on an exception. OS errors become one :class:`~mechanism.core.errors.OutputError`."""
    path = Path(os.path.abspath(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            yield tmp
    except OSError as exc:
        raise _output_error(exc, path, path) from None


def add_shared_argument(parser: argparse.ArgumentParser) -> None:
    """``--allow-few-shared``: compare arms that share fewer than half of their questions."""
    parser.add_argument("--allow-few-shared", action="store_true",
                        help="compare arms that share fewer than half of their questions (refused by default)")


def add_level_argument(parser: argparse.ArgumentParser) -> None:
    """``--level``: a saved space's strategies as fitted, or joined into families."""
    parser.add_argument("--level", choices=("variant", "family"), default="variant",
                        help="with --space: compare the strategies as fitted (variant, default) or their "
                             "families (a core sequence and the strategies one step longer)")


def check_shared_questions(args: argparse.Namespace, runs: pl.DataFrame, *, what: str) -> None:
    """Refuse, with one line naming ``--allow-few-shared``, arms that share fewer than half of
    the questions any of them has (:func:`mechanism.core.schema.refuse_few_shared`, the check of every
    comparison between arms): splits on the few shared ones would be printed as the study."""
    arms = sorted(runs["arm"].unique().to_list())
    if getattr(args, "allow_few_shared", False) or len(arms) < 2:
        return
    shared, total = count_shared(runs, arms)
    refuse_few_shared(shared, total, arms, what=what, force="--allow-few-shared")
