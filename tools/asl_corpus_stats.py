"""The public state-machine corpus (tests/asl_corpus/corpus.json) in numbers: how many machines
compile, how many run in the ASL interpreter as recorded, what they use, and every refusal by reason.

    python tools/asl_corpus_stats.py                  # print; exit 1 when something differs or is missing
    python tools/asl_corpus_stats.py --update         # rewrite corpus.json's recorded outcomes and features
    python tools/asl_corpus_stats.py --dir DIR        # read the definitions from DIR
    python tools/asl_corpus_stats.py --allow-missing  # missing definitions are listed, not an error

The definitions are not in the repository (their sources' terms keep them out): they are read
from a cache directory, `--dir`, else $UNUM_ASL_CORPUS, else ~/.cache/unumctl/asl-corpus/, one
file per index entry named as the entry's `file`. Entries whose file is not there are listed
with their source (repository, path, commit) so that whoever has access can fetch them; the
command then exits 1 unless `--allow-missing`.

For each definition present it checks, as tests/unumctl/asl/test_corpus.py once did per machine: the
outcome ("compiles" or "refused: <error>") and the features recorded in corpus.json, that a
refusal is one line naming the file and a state, that every JSONPath parses, and that a
recorded `run` gives the recorded result (integration Tasks on moto in-process). Exit 1 when
an outcome or features differ (without `--update`), a run differs, a refusal has the wrong
shape, the index is malformed, or (without `--allow-missing`) a definition is missing; else 0.

`--update` is for a deliberate change of the front-end (e.g. after a merge that makes more
machines compile): it rewrites each present entry's `outcome` and `features` and nothing
else, prints what changed, and leaves missing entries as recorded. Review the diff of
corpus.json before committing it. (`make corpus-stats` runs the first form.)
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import unumctl_testing.asl_corpus as harness  # noqa: E402
from runtime.asl import paths  # noqa: E402
from runtime.asl.errors import AslError  # noqa: E402
from unumctl_testing.asl_corpus import (COMPILES, REFUSED, MotoAWS, check_run, compile_entry, corpus_dir,  # noqa: E402
                                      entries, features, index_problems, jsonpaths, machine_path, missing,
                                      refusal_problems, state_names)


def reason(error: str, definition) -> str:
    """A refusal without its file and state: the field path inside the state and the message
    (a supported-integrations list cut), e.g. `Resource: 'arn:aws:states:::ecs:runTask' is not a
    supported integration`."""
    text = error[len(REFUSED):] if error.startswith(REFUSED) else error
    _, _, rest = text.partition(": ")  # drop "<file>: "
    if rest.startswith("not valid JSON"):
        return "not valid JSON"
    loc, _, msg = rest.partition(": ")
    msg = msg.split(" (supported:")[0]
    field = loc
    names = sorted(state_names(definition) if definition is not None else [], key=len, reverse=True)
    cut = max(loc.rfind(".States."), -1)
    tail = loc[cut + len(".States."):] if cut >= 0 else loc[len("States."):] if loc.startswith("States.") else loc
    for n in names:
        if tail.startswith(n + "."):
            field = tail[len(n) + 1:]
            break
    return f"{field}: {msg}"


def main(argv: list[str] | None = None) -> int:
    """Print the corpus's numbers; 1 when the index is malformed, an outcome or the features
    differ from corpus.json (without --update), a recorded run differs, a refusal has the
    wrong shape or a JSONPath does not parse, or a definition is missing from the cache
    directory (without --allow-missing); else 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true",
                    help="rewrite the recorded outcomes and features in corpus.json to today's (deliberate use only)")
    ap.add_argument("--dir", help=f"directory holding the definitions (default: ${harness.CACHE_ENV}, "
                                  "else ~/.cache/unumctl/asl-corpus)")
    ap.add_argument("--allow-missing", action="store_true",
                    help="list the definitions missing from the directory but exit 0 for them")
    args = ap.parse_args(argv)

    index = entries()
    bad_index = index_problems(index)
    if bad_index:
        print(f"{harness.INDEX}: malformed index:\n  " + "\n  ".join(bad_index))
        return 1
    root = corpus_dir(args.dir)
    absent = missing(index, root)
    absent_files = {e["file"] for e in absent}
    compiled, ran, runs, changed = 0, 0, 0, []
    reasons: dict[str, list[str]] = collections.defaultdict(list)
    uses: collections.Counter = collections.Counter()
    uses_ok: collections.Counter = collections.Counter()
    run_problems: list[str] = []
    with contextlib.ExitStack() as stack:
        aws = None
        for e in index:
            if e["file"] in absent_files:
                continue
            definition, outcome = compile_entry(e, root)
            feats = features(definition) if definition is not None else []
            uses.update(feats if definition is not None else ["(not JSON)"])
            if outcome == COMPILES:
                compiled += 1
                uses_ok.update(feats)
            else:
                reasons[reason(outcome, definition)].append(e["file"])
                for p in refusal_problems(e["file"], outcome, definition):
                    run_problems.append(f"{e['file']}: refusal {p}: {outcome}")
            for p in jsonpaths(definition):
                try:
                    paths.validate_path(p)
                except AslError as exc:
                    run_problems.append(f"{e['file']}: JSONPath {p!r} does not parse: {exc}")
            if outcome != e.get("outcome") or feats != e.get("features"):
                changed.append((e["file"], (e.get("outcome"), e.get("features")), (outcome, feats)))
                e["outcome"], e["features"] = outcome, feats
            if "run" in e and outcome == COMPILES:
                runs += 1
                if "aws" in e["run"] and aws is None:
                    aws = stack.enter_context(MotoAWS())
                problems = check_run(definition, e["run"], aws)
                if problems:
                    run_problems.append(f"{e['file']}: " + "; ".join(problems))
                else:
                    ran += 1

    present = len(index) - len(absent)
    print(f"ASL corpus ({harness.INDEX}, definitions in {root}): {len(index)} machines indexed, "
          f"{present} present, {compiled} compile, {ran} run as recorded "
          f"(of {runs} with a recorded run), {present - compiled} refused")
    print("\nuses (machines using it: total / compiling)")
    for feat, n in sorted(uses.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {feat:20} {n:3} / {uses_ok[feat]:3}")
    print("\nrefusals by reason (count: reason; files)")
    for why, files in sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  {len(files):3}: {why}\n       {', '.join(files)}")
    if run_problems:
        print("\nruns that differ from the record, refusals of the wrong shape, JSONPaths that do not parse:\n  "
              + "\n  ".join(run_problems))
    if changed:
        print(f"\n{len(changed)} outcome(s) or features differ from corpus.json:")
        for f, was, now in changed:
            print(f"  {f}\n    recorded: {was[0]}  {was[1]}\n    today:    {now[0]}  {now[1]}")
        if args.update:
            harness.INDEX.write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n")
            print(f"updated {harness.INDEX}")
    if absent:
        print(f"\n{len(absent)} definition(s) missing from {root} (fetch each from its source, save it "
              f"under the file name; --dir or ${harness.CACHE_ENV} to read another directory):")
        for e in absent:
            print(f"  {machine_path(e, root).name}  <-  {e['source']}")
    return 1 if (changed and not args.update) or run_problems or (absent and not args.allow_missing) else 0


if __name__ == "__main__":
    sys.exit(main())
