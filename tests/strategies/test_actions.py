"""Moves from any action interface (mechanism.core.actions): a generic tool read as verb + object."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score

import mechanism as mx
from mechanism.analysis.segmentation import action_tools, render, segment
from mechanism.core.actions import (
    CONSULT_FIELD,
    HANDOFF_FIELD,
    MAX_AGENTS,
    _code_verb,
    _sql_verb,
    detect_action_tools,
    read_action,
    read_nested,
    verb_object,
)
from mechanism.core.errors import InputError
from mechanism.core.schema import from_records, make_step
from mechanism.datasets.worlds import (
    as_dispatched,
    as_generic_action,
    assistant,
    computer,
    handoff,
    interpreter,
    leanprover,
    memory,
    multihop,
    rest,
    service,
    swebash,
    terminal,
    todo,
)

FAST = "hashing-64"


def _read(world, tmp_path):
    return mx.read(world.write(tmp_path / world.name), format=world.format)


def _shell_runs(n_questions=12):
    """Two planted strategies through one `bash` tool: explore-then-edit and grep-then-read."""
    plans = (["ls -la", "cat src/app.py", "sed -i 's/a/b/' src/app.py", "python -m pytest -x"],
             ["grep -rn needle .", "sed -n 10,30p src/app.py", "python -m pytest"])
    records, truth = [], []
    for q in range(n_questions):
        for sample in range(4):
            plan = plans[sample % 2]
            records.append({"arm": "base" if sample < 2 else "rl", "question_id": f"q{q}", "sample_id": sample,
                            "question": f"Fix the failing test number {q}", "gold": [], "answer": "done",
                            "correct": True, "n_rounds": len(plan),
                            "steps": [make_step(tool="bash", arguments=json.dumps({"command": c}),
                                                observation="ok") for c in plan]})
            truth.append(sample % 2)
    return from_records(records), np.array(truth)


def test_verbs_of_shell_commands_requests_and_actions():
    assert verb_object("bash", "command", '{"command": "sudo FOO=1 git diff HEAD~1"}', None)[:2] == ("git diff",
                                                                                                   "HEAD~1")
    assert verb_object("bash", "command", '{"command": "/usr/bin/grep -n x a.py | head"}', None)[0] == "grep"
    assert verb_object("bash", "command", '{"command": "echo \\"unclosed"}', None)[0] == "echo"  # bad quoting
    # the rest of the line is the object too: the figures a program's code carries are its provenance
    # (a ReAct action `python import numpy as np; print(np.sum([3, 36, 81]))` through one `act` tool)
    line = json.dumps({"command": "python import numpy as np; print(int(np.sum([3, 36, 81])))"})
    assert verb_object("act", "command", line, None)[:2] == ("python",
                                                             "import numpy as np print(int(np.sum([3, 36, 81])))")
    heredoc = json.dumps({"command": "cd /repo && python3 - <<'EOF'\nimport re\nx = 1\nEOF"})
    assert verb_object("bash", "command", heredoc, None)[:2] == ("python inline", "- <<EOF import re x = 1 EOF")
    # an in-place edit is another action than a read; a long option holding an `i` is no flag
    edits = {c: verb_object("bash", "command", json.dumps({"command": c}), None)[0]
             for c in ("sed -n 5,9p a.py", "sed -Ei 's/a/b/' a.py", "sed --in-place=.bak 's/a/b/' a.py",
                       "perl -pi.bak -e 's/a/b/' a.py", "perl -Mstrict -ne 'print' a.py")}
    assert list(edits.values()) == ["sed", "sed -i", "sed -i", "perl -i", "perl"]
    # a program run in a project's environment is that program; the runner's own options are skipped,
    # and what follows the program stays its object
    runs = {c: verb_object("bash", "command", json.dumps({"command": c}), None)[:2]
            for c in ("uv run pytest tests/a.py -x", "poetry run python -m pytest -q", "conda run -n dev pytest",
                      "uv run --with rich -- python scripts/a.py", "npx -y eslint src", "uvx ruff check .",
                      "uv pip install -e .", "uv run")}
    assert list(runs.values()) == [("pytest", "tests/a.py -x"), ("pytest", "-q"), ("pytest", ""),
                                   ("python", "scripts/a.py"), ("eslint", "src"), ("ruff", "check ."),
                                   ("uv pip", "install -e ."), ("uv run", "")]
    # a key press is named by its key, from the call's field or, through one text tool, its object
    assert verb_object("computer", "action", '{"action": "key", "text": "ctrl+s"}', None) == ("key ctrl+s", "",
                                                                                               {"text": "ctrl+s"})
    assert verb_object("act", "command", '{"command": "key Return"}', None)[:2] == ("key return", "")
    assert verb_object("computer", "action", '{"action": "key", "text": "hello there"}', None)[0] == "key"
    assert verb_object("computer", "action", '{"action": "type", "text": "ctrl+s"}', None)[0] == "type"
    assert verb_object("execute", "code", '{"code": "df = pd.read_csv(\\"x.csv\\")"}', None)[0] == "read_csv"
    verb, obj, _ = verb_object("request", "method", '{"method": "POST", "url": "/api/v2/orders/A7731/cancel"}', None)
    assert (verb, obj) == ("post api/orders/cancel", "v2 A7731")
    # a tool whose name says its method is that method's verb: http_get(url) reads as
    # http_request(method="GET", url) does, and a name with no method word adds none
    got = verb_object("http_get", "url", '{"url": "/api/v2/orders/A7731"}', None)[0]
    assert got == verb_object("http_request", "method", '{"method": "GET", "url": "/api/v2/orders/A7731"}', None)[0]
    assert got == "get api/orders"
    assert verb_object("fetch", "url", '{"url": "/api/v2/orders/A7731"}', None)[0] == "api/orders"
    assert verb_object("widget", "url", '{"url": "/api/v2/orders"}', None)[0] == "api/orders"
    # the same requests written out through one text tool read as their typed forms do: a method then
    # a path or URL, after the tool's name or not, or a name that says its method; a method word
    # before anything but a path is a verb like any other (a text game's `get apple 2`)
    for written in ("http_request GET /api/v2/orders/A7731", "GET https://shop.example/api/v2/orders/A7731",
                    "http_get /api/v2/orders/A7731"):
        assert verb_object("act", "command", json.dumps({"command": written}), None)[:2] == ("get api/orders",
                                                                                           "v2 A7731"), written
    assert verb_object("act", "command", '{"command": "get apple 2"}', None)[:2] == ("get", "apple 2")
    assert verb_object("act", "command", '{"command": "curl -X POST https://x.org/a"}', None)[0] == "curl"


def test_a_shell_agent_is_read_by_its_programs_not_as_one_tool():
    runs, truth = _shell_runs()
    assert action_tools(runs) == {"bash": "command"}
    by_verb = render(runs)["tools"].to_list()
    # `sed -i` edits the file and `sed -n` prints it: two actions of one program
    assert by_verb[0] == "ls > cat > sed_i > pytest" and by_verb[1] == "grep > sed > pytest"
    by_name = render(runs, action_field=None)["tools"].to_list()
    assert {tool for seq in by_name for tool in seq.split(" > ")} == {"bash"}  # what it collapses to
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    assert adjusted_rand_score(truth, space.labels_) == 1.0
    assert set(space.describe()["name"].to_list()) == {"grep -> sed -> pytest", "ls -> cat -> sed_i -> pytest"}


def test_an_interpreter_given_code_is_another_action_than_one_running_a_file():
    verbs = [verb_object("bash", "command", json.dumps({"command": c}), None)[0]
             for c in ("python3 scripts/report.py data.csv", "python3 - <<'EOF'\nopen('a.py').write('x')\nEOF",
                       "python -c 'import a'", "node -e 'x()'", "bash -c 'make'", "python3 --version", "python -V",
                       "perl -pi -e 's/a/b/' a.py", "python3 -m pytest -x")]
    assert verbs == ["python", "python inline", "python inline", "node inline", "bash inline", "python --version",
                     "python --version", "perl -i", "pytest"]


def test_a_printer_whose_output_goes_into_a_file_writes_it():
    # mini-swe-agent's "create a new file" (`cat <<'EOF' > f`) is an edit, not a look at a file
    verbs = [verb_object("bash", "command", json.dumps({"command": c}), None)[0]
             for c in ("cat <<'EOF' > src/a.py\nimport re\nEOF", "cd /testbed && cat > t.py <<EOF\nx\nEOF",
                       "echo 'x = 1' >> notes.py", "cat src/a.py", "cat src/a.py | grep foo > hits.txt",
                       "cat a.log 2> err.txt", "echo done > /dev/null", "printf '%s' x >out.txt")]
    assert verbs == ["cat to_file", "cat to_file", "echo to_file", "cat", "cat", "cat", "echo", "printf to_file"]


def test_a_shell_given_a_command_runs_that_command_and_a_script_stays_the_shells():
    # one generic tool logging a shell tool's call writes the shell's name before its command:
    # `act(command="Bash uv run pytest")`, `act(command='Bash "git status -s" "Check state"')`
    def verb(command):
        return verb_object("act", "command", json.dumps({"command": command}), None)[:2]

    assert verb("Bash uv run pytest tests/a.py") == ("pytest", "tests/a.py")
    assert verb('Bash "git status -s" "Check git state"') == ("git status", "-s Check git state")
    assert verb('bash "cd repo && grep -n foo a.py"') == ("grep", "-n foo a.py")
    assert verb("sh make test")[0] == "make test"  # make reads its target as a subcommand
    # a script (a path or a file name), an option, code given inline: the shell's own actions
    assert [verb(c)[0] for c in ("bash run.sh", "sh ./configure", "bash -c 'ls'", "bash", "bash -x t.sh",
                                 'bash "unclosed', "bash bash ls")] == \
        ["bash", "sh", "bash inline", "bash inline", "bash", "bash", "bash"]


def test_a_slip_in_a_program_with_a_subcommand_or_a_version_is_one_attempt():
    # `gti log` and `pthon3` fail with "command not found" and are typed again right: each
    # pair is one attempt of the move the retry made, as a slip in a bare program's name is
    commands = [("gti log -3 a.py", "bash: gti: command not found\n[exit code: 127]"), ("git log -3 a.py", "abc fix"),
                ("pthon3 scripts/run.py", "bash: pthon3: command not found\n[exit code: 127]"),
                ("python3 scripts/run.py", "ok")]
    records = [{"arm": "base", "question_id": f"q{q}", "sample_id": 0, "question": "Fix the crash", "gold": [],
                "answer": "done", "correct": True, "n_rounds": len(commands),
                "steps": [make_step(tool="bash", arguments=json.dumps({"command": c}), observation=o)
                          for c, o in commands]} for q in range(3)]
    table = render(from_records(records), action_field={"bash": "command"})
    assert table["tools"].to_list() == ["git_log > python"] * 3
    assert table["n_failed"].to_list() == [2] * 3


def test_a_saved_space_reads_new_runs_as_it_read_the_fitted_ones(tmp_path):
    runs, _ = _shell_runs()
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    loaded = mx.StrategySpace.load(space.save(tmp_path / "space"))
    assert loaded.action_tools_ == {"bash": "command"}
    # one trajectory alone is too little to detect anything: the fitted reading decides
    assert (loaded.transform(runs[:1]) == space.labels_[:1]).all()
    assert (loaded.transform(runs) == space.labels_).all()


def test_action_field_names_a_tool_or_turns_the_reading_off():
    runs, _ = _shell_runs()
    assert action_tools(runs, {"Bash": "command"}) == {"bash": "command"}
    off = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, action_field=None).fit(runs)
    assert off.action_tools_ == {} and "bash" in off.describe()["name"][0]
    for bad in ("yes", {"bash": 3}, ["bash"]):
        with pytest.raises(InputError, match="`action_field`"):
            mx.StrategySpace(embedder=FAST, progress=False, action_field=bad).fit(runs)


def test_a_search_tool_is_never_generic_however_its_queries_begin(tmp_path):
    runs = _read(multihop(n_questions=20, random_state=0), tmp_path)
    assert action_tools(runs) == {}
    queries = [[{"tool": "lookup", "query": f"who directed film {i % 5}"}] for i in range(40)]
    assert detect_action_tools(queries, range(40)) == {}  # one verb shared is not a vocabulary


def test_key_presses_are_one_action_of_the_vocabulary_whatever_their_keys():
    # every question presses its own shortcut: named by its key when read, one verb when the
    # tool's vocabulary is judged (else the request's shortcuts would hide a generic tool)
    def call(action, q):
        return {"tool": "computer", "arguments": json.dumps({"action": action, "text": f"ctrl+{q}"})}

    rows = [[call(a, q) for a in ("screenshot", "key", "key", "left_click")] for q in range(40)]
    assert detect_action_tools(rows, range(40)) == {"computer": "action"}
    assert verb_object("computer", "action", rows[0][1]["arguments"], None)[0] == "key ctrl+0"


def _code(program):
    return verb_object("python", "code", json.dumps({"code": program}), None)[0]


def test_a_program_is_read_by_the_libraries_it_imports_and_whether_it_loops_or_asserts():
    symbolic = "import sympy as sp\nx = sp.symbols('x')\nprint(sp.solve(x**2 - 5*x + 6, x))"
    monte_carlo = "import random\nimport math\nhits = sum(random.random() < 0.5 for _ in range(10**5))\nprint(hits)"
    check = "from math import comb\nassert comb(10, 3) == 120\nprint('ok')"
    assert [_code(c) for c in (symbolic, monte_carlo, check)] == ["sympy", "math random loop", "math assert"]
    # the order of the imports says nothing: a program is the same action whichever it names first
    assert _code("import math\nimport random\nfor _ in range(9): pass") == _code(
        "from random import random\nimport math.fsum\nwhile True: break")
    # without imports (a notebook's later cell), its first function that is not a built-in; else `code`
    assert _code("summary = df.groupby('region').agg(total=('sales', 'sum'))\nprint(summary)") == "groupby"
    assert [_code(c) for c in ("print(2 ** 10)", "if (x > 1):\n    print(len(str(x)))", "")] == ["code"] * 3
    # words inside a line are no loop unless they make one; a hostile line stays one bounded read
    assert _code("print('for whom the bell tolls')") == "code"
    assert _code("for " * 4_000) == "code loop"
    # a program is read on its first 20,000 characters (a call's arguments are parsed on as many)
    assert _code_verb("print(1)\n" * 2_000 + "import numpy as np") == "numpy"
    assert _code_verb("print(1)\n" * 3_000 + "import numpy as np") == "code"


def test_a_math_agent_with_one_python_tool_is_read_by_its_programs(tmp_path):
    world = interpreter(n_questions=20, random_state=0)
    runs = _read(world, tmp_path)
    assert action_tools(runs) == {"python": "code"}
    typed = render(runs)["tools"].to_list()
    tools = {t for seq in typed if seq for t in seq.split(" > ")}
    assert "python" not in tools and {"sympy", "random_loop"} <= tools
    # the same programs logged through one `act(command=...)` tool are read as programs, not as
    # shell lines whose first word (`import`, `from`, a variable) would be the program
    generic = as_generic_action(world)
    acted = mx.read(generic.write(tmp_path / "acted"), format=generic.format)
    assert action_tools(acted) == {"act": "command"}
    assert render(acted)["tools"].to_list() == typed


def test_a_command_is_read_as_a_python_program_only_where_it_begins_like_one():
    python = ("import math\nprint(math.pi)", "from sympy import symbols", "total = 3 * 4\nprint(total)",
              "a, b = 1, 2", "for i in range(3):\n    print(i)", "print(2 ** 10)", "# a comment\nimport os")
    shell = ("ls -la", "VAR=1 make test", "grep -rn needle .", "python3 - <<'EOF'\nimport re\nEOF",
             "for f in *.py; do echo $f; done", "if [ -f a ]; then ls; fi", "go to sofa 1",
             "import -window root shot.png")
    read = {c: verb_object("act", "command", json.dumps({"command": c}), None)[0] for c in python + shell}
    assert [read[c] for c in python] == ["math", "sympy", "code", "code", "code loop", "code", "os"]
    assert [read[c] for c in shell] == ["ls", "make test", "grep", "python inline", "for", "if", "go", "import"]


def test_a_sql_statement_is_read_by_what_it_does_whatever_field_holds_it():
    catalog = ("SELECT name FROM sqlite_master WHERE type = 'table'", "PRAGMA table_info(orders)", "DESCRIBE orders",
               "select column_name from information_schema.columns where table_name = 'orders'", "SHOW TABLES")
    assert {_sql_verb(c)[0] for c in catalog} == {"schema"}
    # rows as they are, a query, a write: three actions; the tables, columns and values are the object
    assert _sql_verb("select * from orders limit 5") == ("sample", "orders", ("limit", "star"))
    # over a whole table: how many rows, what values a column takes; with a filter, a question of the data
    assert [_sql_verb(q)[0] for q in ("SELECT COUNT(*) AS n FROM orders", "SELECT city, COUNT(*) FROM c GROUP BY city",
                                      "SELECT MIN(day), MAX(day) FROM orders", "SELECT COUNT(*) FROM t WHERE a = 1")
            ] == ["count", "values", "values", "select"]
    assert _sql_verb("SELECT * FROM orders WHERE id = 42")[0] == "select"
    # aliases (`o`, `c`, `AS n`) are no object: they vary with the writer
    verb, obj, marks = _sql_verb("SELECT COUNT(*) AS n FROM orders o JOIN customers AS c ON o.cust_id = c.id\n"
                                 "WHERE c.city = 'Lyon' -- the city asked\nGROUP BY c.id HAVING n > 3")
    assert verb == "select" and obj.split() == ["orders", "customers", "cust_id", "id", "city", "3", "Lyon"]
    assert marks == ("join", "where", "group", "aggregate")
    assert [_sql_verb(c)[0] for c in ("INSERT INTO t (a) VALUES (1)", "update t set a = 1", "DELETE FROM t",
                                      "CREATE TABLE x (a int)")] == ["insert", "update", "delete", "create"]
    # a CTE is no subquery; a quoted value is a value (its words make no mark), carried whole
    assert _sql_verb("WITH x AS (SELECT 1) SELECT * FROM x")[2] == ("cte", "star")
    assert _sql_verb("SELECT note FROM t WHERE note = 'join us -- for the union'")[1:] == (
        "note t join us -- for the union", ("where",))
    # an apostrophe inside a comment opens no value
    assert _sql_verb("SELECT a FROM t -- don't\nWHERE c = 'Lyon'")[1:] == ("a t c Lyon", ("where",))
    # in a `query` field (LangChain's sql_db_query, MCP's read_query), a `sql` field or one text command alike
    for tool, field in (("read_query", "query"), ("execute_sql", "sql"), ("act", "command")):
        assert verb_object(tool, field, json.dumps({field: "select * from t"}), None)[0] == "sample"
    # a harness that writes the call out as one command, the tool's name first
    assert verb_object("act", "command", json.dumps({"command": "run_sql SELEC * FROM t"}), None)[:2] == ("sample", "t")
    # plain words that begin as SQL keywords do are not statements
    for words in ("select Size M", "show me the room", "describe the painting", "update the file", "delete it"):
        assert verb_object("act", "command", json.dumps({"command": words}), None)[0] == words.split()[0].lower()


def test_a_database_agent_with_one_sql_tool_is_read_by_its_statements():
    plans = (["SELECT name FROM sqlite_master WHERE type='table'", "PRAGMA table_info(orders)",
              "SELECT COUNT(*) FROM orders WHERE city = '{city}'"],
             ["SELECT * FROM orders LIMIT 5", "SELECT COUNT(*) FROM orders WHERE city = '{city}'"],
             ["SELECT COUNT(*) FROM orders WHERE city = '{city}'"])
    records, truth = [], []
    for q in range(12):
        city = ("Lyon", "Oslo", "Lima", "Kyiv")[q % 4] + str(q)
        for sample in range(6):
            plan = plans[sample % 3]
            records.append({"arm": "base" if sample < 3 else "rl", "question_id": f"q{q}", "sample_id": sample,
                            "question": f"How many orders came from {city}?", "gold": [], "answer": "7",
                            "correct": True, "n_rounds": len(plan),
                            "steps": [make_step(tool="read_query", arguments=json.dumps({"query": c.format(city=city)}),
                                                observation="n\n7") for c in plan]})
            truth.append(sample % 3)
    # a slip in the statement's keyword, failed and run again put right, is one attempt of that statement
    records[0]["steps"].insert(0, make_step(tool="read_query", arguments=json.dumps(
        {"query": "SELEC name FROM sqlite_master WHERE type='table'"}), observation='near "SELEC": syntax error'))
    runs = from_records(records)
    assert action_tools(runs) == {"read_query": "query"}
    assert render(runs)["tools"].to_list()[:3] == ["schema > schema > select", "sample > select", "select"]
    assert render(runs, retries="keep")["tools"].to_list()[0] == "schema! > schema > schema > select"
    # read by its name alone, every episode is `read_query` and the three ways are one
    assert {t for seq in render(runs, action_field=None)["tools"].to_list() for t in seq.split(" > ")} == {"read_query"}
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    assert adjusted_rand_score(truth, space.labels_) == 1.0


@pytest.mark.parametrize("make, expected", [(terminal, {"bash": "command"}), (computer, {"computer": "action"})])
def test_the_one_tool_worlds_are_detected(make, expected, tmp_path):
    runs = _read(make(n_questions=20, random_state=0), tmp_path)
    assert action_tools(runs) == expected
    assert render(runs)["tools"].str.contains(next(iter(expected))).mean() < 0.05


def test_episodes_logged_through_act_find_the_strategies_of_typed_tools(tmp_path):
    world = service(n_questions=30, random_state=0)
    typed = _read(world, tmp_path)
    generic_world = as_generic_action(world)
    generic = _read(generic_world, tmp_path)
    assert action_tools(generic) == {"act": "command"}
    assert render(generic)["tools"].to_list() == render(typed)["tools"].to_list()
    truth = generic_world.labels_for(generic)
    labels = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(generic).labels_
    by_name = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, action_field=None).fit(generic).labels_
    assert adjusted_rand_score(truth, labels) >= 0.9
    assert adjusted_rand_score(truth, by_name) < adjusted_rand_score(truth, labels) - 0.3


def test_a_shell_tool_logged_through_act_reads_as_the_typed_shell_tool(tmp_path):
    # the todo world's `Bash(command=..., description=...)`, keys in either order, among typed
    # tools: through `act` its calls read by their programs, as typed (they read as `bash`)
    world = todo(n_questions=12, random_state=0)
    typed = _read(world, tmp_path)
    generic = _read(as_generic_action(world), tmp_path)
    assert render(generic)["tools"].to_list() == render(typed)["tools"].to_list()
    assert render(typed)["tools"].str.contains("pytest").mean() > 0.5


@pytest.mark.parametrize(("make", "n"), [(todo, 12), (leanprover, 12), (swebash, 12), (handoff, 12), (memory, 12),
                                        (rest, 20), (assistant, 12)])  # REST: `act` is found generic from 20
def test_the_same_episodes_through_act_give_the_typed_move_tokens(make, n, tmp_path):
    # each world was read otherwise through `act` until these were read as typed calls are:
    # TodoWrite's JSON list (its keys are no values), a Lean proof state beside the tactic
    # (`run_tactic 3 "simp"`: the number stays a value), an in-place edit's empty output (a
    # success, as through `bash`), a handoff's and a memory call's values in any order, a
    # request's JSON body after its URL, a date and a time side by side (no one number)
    world = make(n_questions=n, random_state=0)
    typed = render(_read(world, tmp_path))["tokens"].to_list()
    generic = render(_read(as_generic_action(world), tmp_path))["tokens"].to_list()
    assert generic == typed


def _act_run(commands, observations=None):
    steps = [make_step(tool="act", arguments=json.dumps({"command": c}),
                       observation="ok" if observations is None else observations[i]) for i, c in enumerate(commands)]
    return from_records([{"arm": "a", "question_id": "q", "sample_id": 0, "question": "Fix the bug in a.py",
                          "gold": [], "answer": "done", "correct": True, "n_rounds": len(steps), "steps": steps}])


def test_a_request_body_written_after_the_url_reads_as_the_typed_body():
    # the REST agent's `PATCH /orders/ORD-1 {"shipping_address": {...}}` through `act`: the
    # body's values, as the typed call sends them (its keys were read as new values before)
    url = "https://admin.example/api/v2/orders/ORD-68446"
    body = {"shipping_address": {"line1": "75 Nos Road", "city": "Lyon"}}
    typed = make_step(tool="http_request", arguments=json.dumps({"method": "PATCH", "url": url, "body": body}),
                      observation="200 OK")
    written = make_step(tool="act", observation="200 OK", arguments=json.dumps(
        {"command": f"http_request PATCH {url} {json.dumps(body)}"}))
    question = "Ship ORD-68446 to 75 Nos Road, Lyon instead."

    def read(step, tool, field):
        runs = from_records([{"arm": "a", "question_id": "q", "sample_id": 0, "question": question, "gold": [],
                              "answer": "done", "correct": True, "n_rounds": 1, "steps": [step]}])
        return segment(runs, action_field={tool: field}).row(0, named=True)

    got, want = read(written, "act", "command"), read(typed, "http_request", "method")
    fields = ("tool", "sources", "scope", "n_atoms", "share_user", "share_new")
    assert [got[f] for f in fields] == [want[f] for f in fields]
    # the id and the address are the user's; the path's version (`v2`) is the only new value
    assert got["tool"] == "patch_api_orders" and got["sources"] == "user+new"


def test_quoted_values_are_one_call_in_any_order_and_a_plain_action_keeps_its_word_order():
    edits = _act_run(["open a.py", 'edit a.py "x = 1" "x = 2"', 'edit "x = 2" a.py "x = 1"'])
    moves = segment(edits, action_field={"act": "command"})
    assert moves["relation"].to_list()[1:3] == ["switch", "repeat"]
    takes = _act_run(["go to cabinet 1", "take plate 2 from cabinet 1", "take plate 1 from cabinet 2"])
    assert segment(takes, action_field={"act": "command"})["relation"].to_list()[2] == "revise"


# values a harness quotes when it writes several (text holding a space; quotes, escapes and
# breaks inside): a plain value keeps its place (`Read a.py 40 7` is not `Read a.py 7 40`)
_QUOTED_VALUE = st.builds(lambda a, b: f"{a} {b}", st.text(alphabet="abc=\"'\\\n.", min_size=1, max_size=6),
                          st.text(alphabet="abc=\"'\\\n.", min_size=1, max_size=6))


@settings(max_examples=60, deadline=None)
@given(values=st.lists(_QUOTED_VALUE, min_size=2, max_size=4), order=st.permutations(range(4)))
def test_a_typed_call_written_out_in_any_key_order_is_the_same_call(values, order):
    # the same typed call, its keys given in two orders and each written out as a harness
    # would (`command_text`, its values quoted), reads as one call: the second a repeat
    from mechanism.datasets.worlds.generic import command_text
    keys = [f"k{i}" for i in range(len(values))]
    first = dict(zip(keys, values))
    second = {keys[i]: first[keys[i]] for i in [j for j in order if j < len(keys)]}
    runs = _act_run(["edit " + command_text(None, first), "edit " + command_text(None, second)])
    relations = segment(runs, action_field={"act": "command"})["relation"].to_list()
    assert relations[1] == "repeat"


def test_a_json_argument_written_after_the_verb_is_read_by_its_values_not_its_keys():
    command = 'TodoWrite [{"content": "Fix a.py", "status": "done"}]'
    step = {"tool": "act", "arguments": json.dumps({"command": command})}
    read = read_action(step, "command")
    assert read["tool"] == "todowrite"
    assert json.loads(read["arguments"])["object"] == [{"content": "Fix a.py", "status": "done"}]
    # `status` is a key: a later call naming the status is no reuse of the list's values
    moves = segment(_act_run(['TodoWrite [{"content": "Fix a.py", "status": "done"}]', "grep status b.py"]),
                    action_field={"act": "command"})
    assert moves["sources"].to_list()[1] == "new"


def test_the_numbers_beside_a_nested_command_stay_its_values():
    call = {"tool": "act", "arguments": json.dumps({"command": 'run_tactic 3 "simp [h]"'})}
    read = read_nested(call, "command", read_action(call, "command"))
    assert read["tool"] == "simp"
    assert json.loads(read["arguments"])["numbers"] == ["3"]


def test_an_empty_answer_is_a_writing_programs_success_and_a_text_games_failure():
    runs = _act_run(["sed -i 's/a/b/' a.py", "rm -f tmp.txt", "go north", "cat a.py"], ["", "", "", ""])
    assert segment(runs, action_field={"act": "command"})["failed"].to_list()[:4] == [False, False, True, True]


@pytest.mark.parametrize("make", [terminal, interpreter, todo])
@pytest.mark.parametrize(("tool", "field"), [("step", "action"), ("env", "input")])
def test_what_a_generic_tools_field_is_called_does_not_change_the_reading(make, tool, field, tmp_path):
    # a shell command or a program written out reads the same whatever the argument's name:
    # `step(action="sed -i ...")` as `act(command="sed -i ...")`, as the typed tool
    world = make(n_questions=12, random_state=0)
    typed = render(_read(world, tmp_path))["tools"].to_list()
    for generic in (as_generic_action(world), as_generic_action(world, tool=tool, field=field)):
        assert render(_read(generic, tmp_path))["tools"].to_list() == typed


def test_ignore_tools_leaves_bookkeeping_calls_out_of_fit_save_and_apply(tmp_path):
    runs, truth = _shell_runs()
    noisy = runs.with_columns(runs["steps"].map_elements(
        lambda steps: [make_step(tool="think", arguments='{"thought": "hmm"}', observation=""), *steps],
        return_dtype=runs["steps"].dtype))
    assert render(noisy)["tools"][0].startswith("think")
    assert render(noisy, ignore_tools=["Think"])["tools"].to_list() == render(runs)["tools"].to_list()
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, ignore_tools=["think"]).fit(noisy)
    assert adjusted_rand_score(truth, space.labels_) == 1.0 and "think" not in " ".join(space.describe()["name"])
    loaded = mx.StrategySpace.load(space.save(tmp_path / "space"))
    assert loaded.ignore_tools == ["think"] and (loaded.transform(noisy) == space.labels_).all()
    with pytest.raises(InputError, match="`ignore_tools`"):
        mx.StrategySpace(embedder=FAST, progress=False, ignore_tools="think").fit(runs)


def _bare_react_file(tmp_path):
    """A text game in ReAct text with bare actions: `Action: go north`, no brackets."""
    path = tmp_path / "game.jsonl"
    plans = (["look", "go west", "go north", "open door"], ["go north", "take key", "open door"])
    with path.open("w") as out:
        for q in range(8):
            for sample in range(4):
                text = "".join(f"Thought: next\nAction: {a}\nObservation: "
                               f"{'Nothing happens.' if a == 'take key' and q % 2 else 'You are in a room.'}\n"
                               for a in plans[sample % 2])
                out.write(json.dumps({"question": f"Open the door of room {q}", "text": text, "question_id": f"q{q}",
                                      "arm": "base" if sample < 2 else "rl", "correct": bool(sample % 2)}) + "\n")
    return path


def test_bare_react_actions_are_read_as_verbs_of_one_generic_tool(tmp_path):
    runs, report = mx.read(_bare_react_file(tmp_path), report=True)
    assert report.formats and set(report.formats.values()) == {"react"}
    assert any("without brackets" in n for n in report.notes)
    assert runs["n_rounds"].to_list()[:2] == [4, 3] and runs["steps"][0][0]["tool"] == "act"
    assert action_tools(runs) == {"act": "*"}
    # "go west" then "go north": two moves of the verb `go` (the plan reads it as called again)
    assert render(runs)["tools"][:2].to_list() == ["look > go > go > open", "go > take > open"]
    labels = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs).labels_
    assert adjusted_rand_score(np.arange(runs.height) % 2, labels) == 1.0


def test_a_bare_line_beside_bracketed_actions_stays_a_dropped_thought(tmp_path):
    path = tmp_path / "mixed.jsonl"
    text = "Thought: a\nAction: search[Paris]\nObservation: Paris is a city.\nAction: look around\nObservation: ?\n"
    path.write_text(json.dumps({"question": "Where?", "text": text, "correct": True, "arm": "a"}) + "\n")
    runs, report = mx.read(path, report=True)
    assert runs["n_rounds"][0] == 1 and any("dropped" in n for n in report.notes)


def test_rare_mistyped_programs_do_not_make_a_large_table_read_as_free_text():
    # five programs on every question, and 60 typos each met on three questions: 65 shared
    # verbs, but the five and 28 of the typos cover 80 % of the calls (33, under 40), so the
    # tool is still generic (counting every shared verb, 65 > 40 read it as free text)
    rows, questions = [], []
    for q in range(60):
        rows.append([{"tool": "bash", "arguments": json.dumps({"command": c})}
                     for c in ("ls", "cat a.py", "grep -n x .", "sed -n 1,9p a.py", "python -m pytest")])
        questions.append(q)
    for typo in range(60):
        for q in range(3):
            rows.append([{"tool": "bash", "arguments": json.dumps({"command": f"typo{typo}x a.py"})}])
            questions.append(q)
    assert detect_action_tools(rows, questions) == {"bash": "command"}
    # 30 common first words cover 80 % of the calls, but 200 words are shared across questions:
    # past 160 the field is free text, however concentrated its commonest words
    text = [[{"tool": "bash", "arguments": json.dumps({"command": f"common{w % 30} and more"})}] for w in range(2100)]
    text += [[{"tool": "bash", "arguments": json.dumps({"command": f"rare{w} and more"})}] for w in range(170)
             for _ in range(3)]
    assert detect_action_tools(text, [i % 7 for i in range(len(text))]) == {}


def _handoff_runs(agents=("refunds", "booking", "baggage"), n_questions=12):
    """Two planted ways through a multi-agent system: a handoff at once to the agent the
    question needs, or a lookup by the triage agent first; the agent is the question's."""
    records, truth = [], []
    for q in range(n_questions):
        agent = agents[q % len(agents)]
        for sample in range(4):
            hand = make_step(tool=f"transfer_to_{agent}", arguments="{}", observation=json.dumps({"assistant": agent}))
            look = make_step(tool="lookup_reservation", arguments=json.dumps({"confirmation": f"C{q}X"}),
                             observation=json.dumps({"confirmation": f"C{q}X", "status": "confirmed"}))
            steps = [hand, look] if sample % 2 else [look, hand]
            records.append({"arm": "base" if sample < 2 else "rl", "question_id": f"q{q}", "sample_id": sample,
                            "question": f"Help with booking C{q}X", "gold": [], "answer": "done",
                            "correct": True, "n_rounds": 2, "steps": steps})
            truth.append(sample % 2)
    return from_records(records), np.array(truth)


def test_handoffs_to_several_agents_are_one_verb_whose_object_is_the_agent(tmp_path):
    runs, truth = _handoff_runs()
    assert action_tools(runs) == dict.fromkeys(["transfer_to_baggage", "transfer_to_booking", "transfer_to_refunds"],
                                               HANDOFF_FIELD)
    table = render(runs)
    assert set(table["tools"].to_list()) == {"transfer_to > lookup_reservation", "lookup_reservation > transfer_to"}
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    assert adjusted_rand_score(truth, space.labels_) == pytest.approx(1.0)
    loaded = mx.StrategySpace.load(space.save(tmp_path / "space"))
    assert loaded.action_tools_ == space.action_tools_
    assert (loaded.transform(runs) == space.labels_).all()
    from mechanism.report.study import _reading_note

    assert "Handoffs between agents are read as one move, transfer_to" in _reading_note(space)
    # one agent handed to (tau-bench's transfer_to_human_agents) is a tool like any other
    alone, _ = _handoff_runs(agents=("human_agents",))
    assert action_tools(alone) == {}
    assert "transfer_to_human_agents" in render(alone)["tools"][0]
    # the same episodes logged through one generic tool: the handoffs are its verbs, read alike
    records = [{**row, "steps": [make_step(tool="act", arguments=json.dumps(
        {"command": f"{st['tool']} {json.loads(st['arguments']).get('confirmation', '')}".strip()}),
        observation=st["observation"]) for st in row["steps"]]} for row in runs.to_dicts()]
    generic = from_records(records)
    assert set(action_tools(generic).values()) == {"command", HANDOFF_FIELD}
    assert set(render(generic)["tools"].to_list()) == set(table["tools"].to_list())
    # the reading is the fit's own: turned off with the others
    off = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, action_field=None).fit(runs)
    assert off.action_tools_ == {}


def test_agents_consulted_as_tools_are_one_verb_whose_object_is_the_agent(tmp_path):
    # a system that hands to its specialists, or consults them as tools (`ask_<agent>`, the
    # agent's answer coming back): which specialist is the question's, how is the strategy's
    handed, truth = _handoff_runs()
    records = handed.to_dicts()
    for row in records[0::2]:  # the lookup-first half consults instead of handing off
        agent = row["steps"][1]["tool"].removeprefix("transfer_to_")
        row["steps"][1] = make_step(tool=f"ask_{agent}", arguments=json.dumps({"input": "eligible?"}),
                                    observation="Yes, eligible for a full refund.")
        row["steps"].append(make_step(tool="ask_weather", arguments=json.dumps({"city": "Oslo"}),
                                      observation="Sunny"))  # asks no agent: a tool like any other
    runs = from_records(records)
    found = action_tools(runs)
    assert {t: f for t, f in found.items() if f == CONSULT_FIELD} == dict.fromkeys(
        ["ask_baggage", "ask_booking", "ask_refunds"], CONSULT_FIELD)
    assert "ask_weather" not in found
    table = render(runs)
    assert set(table["tools"].to_list()) == {"transfer_to > lookup_reservation",
                                             "lookup_reservation > consult > ask_weather"}
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    assert adjusted_rand_score(truth, space.labels_) == pytest.approx(1.0)
    from mechanism.report.study import _reading_note

    assert "Agents consulted as tools are read as one move, consult" in _reading_note(space)
    loaded = mx.StrategySpace.load(space.save(tmp_path / "space"))
    assert loaded.action_tools_ == space.action_tools_
    assert (loaded.transform(runs) == space.labels_).all()
    # without handoffs to name the agents, `ask_refunds` is a tool like any other
    alone = from_records([{**row, "steps": row["steps"][1:]} for row in records[0::2]])
    assert action_tools(alone) == {}
    # through one generic tool, the consultations are its verbs, read alike
    generic = from_records([{**row, "steps": [make_step(tool="act", arguments=json.dumps({"command": st["tool"]}),
                                                        observation=st["observation"]) for st in row["steps"]]}
                            for row in records])
    assert set(action_tools(generic).values()) == {"command", HANDOFF_FIELD, CONSULT_FIELD}
    assert set(render(generic)["tools"].to_list()) == set(table["tools"].to_list())


def test_a_saved_space_holds_every_name_a_multi_agent_table_can_read():
    # every handoff and consult form of the most agents read as a multi-agent system: a space
    # saved with them loads (its check bounds the entries), and one agent more is no such system
    from mechanism.analysis._strategies.persist import MAX_ACTION_TOOLS, _action_tools

    agents = [f"desk{i}" for i in range(MAX_AGENTS)]
    names = [f"{pre}{a}{suf}" for a in agents for suf in ("", "_agent")
             for pre in ("transfer_to_", "transfer_back_to_", "handoff_to_", "hand_off_to_",
                         "ask_", "consult_", "delegate_", "delegate_to_", "invoke_", "")]
    rows = [[{"tool": n, "arguments": "{}"}] for n in names]
    found = detect_action_tools(rows, [i % 7 for i in range(len(rows))])
    assert set(found) == set(names) and set(found.values()) == {HANDOFF_FIELD, CONSULT_FIELD}
    assert len(found) <= MAX_ACTION_TOOLS
    assert _action_tools(found, "space.json") == found
    more = [*rows, [{"tool": "transfer_to_one_more", "arguments": "{}"}]]
    assert detect_action_tools(more, [i % 7 for i in range(len(more))]) == {}


def _calls(tool, arguments, n_questions=8):
    """One call a trajectory, question by question, of ``tool`` with each of ``arguments``."""
    return ([[{"tool": tool, "arguments": json.dumps(a), "query": None}] for a in arguments] * n_questions,
            [q for q in range(n_questions) for _ in arguments])


def test_an_action_field_of_any_name_is_read_where_it_holds_a_command_line():
    """A Lean prover's `run_tactic(proof_state, tactic)`: the tactic, a verb and its object, is
    the action whatever the field is called (read by the tool's name before: every strategy one)."""
    tactics = ["intro n", "induction n with k ih", "simp [Nat.add_comm]", "rw [h] at h2", "omega", "exact h",
               "apply Nat.le_of_lt", "rcases h with ⟨x, hx⟩"]
    rows, questions = _calls("run_tactic", [{"proof_state": i, "tactic": t} for i, t in enumerate(tactics)])
    assert detect_action_tools(rows, questions) == {"run_tactic": "tactic"}
    assert verb_object("run_tactic", "tactic", json.dumps({"proof_state": 3, "tactic": "rw [h] at h2"}), None)[:2] \
        == ("rw", "[h] at h2")


def test_a_parameter_chosen_from_a_few_words_or_one_text_among_several_is_no_action():
    """A typed tool's enumerated parameter (`move(direction="up")`) has no object after its
    word; an edit's code or a mail's subject sits beside other texts: neither is an action."""
    rows, questions = _calls("move", [{"direction": d} for d in ("up", "down", "left", "right")])
    assert detect_action_tools(rows, questions) == {}
    edits = [{"path": f"src/m{i}.py", "old": f"return x{i}", "new": f"return y{i} if ok else None"} for i in range(6)]
    rows, questions = _calls("edit_file", edits)
    assert detect_action_tools(rows, questions) == {}
    mails = [{"to": "a@b.org", "subject": s, "body": "Hello"} for s in ("RE: Invoice", "Re: plan", "About the plan")]
    rows, questions = _calls("send_email", mails)
    assert detect_action_tools(rows, questions) == {}


def _tactic_runs(n_questions=10):
    """Two planted strategies of a prover through `run_tactic(proof_state, tactic)`: induction, then
    simp; a chain of rewrites, then ring."""
    plans = (["induction n with k ih", "simp [Nat.add_comm]", "simp at ih ⊢"],
             ["rw [h₀] at h₁", "rw [Nat.mul_comm]", "ring"])
    records = []
    for q in range(n_questions):
        for sample in range(4):
            steps = [make_step(tool="run_tactic", arguments=json.dumps({"proof_state": i, "tactic": t}),
                               observation=json.dumps({"proofState": i + 1, "goals": []}))
                     for i, t in enumerate(plans[sample % 2])]
            records.append({"arm": "base" if sample < 2 else "rl", "question_id": f"q{q}", "sample_id": sample,
                            "question": f"Prove lemma {q}.", "gold": [], "answer": "done", "correct": True,
                            "n_rounds": len(steps), "steps": steps})
    return from_records(records), np.array([s % 2 for _ in range(n_questions) for s in range(4)])


def test_a_space_read_through_a_field_of_another_name_saves_and_loads(tmp_path):
    """The field a detection found by what it holds (`tactic`) is saved and read back with the
    space; a user's own field name too (a space holding one was refused on load before)."""
    runs, truth = _tactic_runs()
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    assert space.action_tools_ == {"run_tactic": "tactic"}
    assert adjusted_rand_score(truth, space.labels_) == 1.0
    loaded = mx.StrategySpace.load(space.save(tmp_path / "space"))
    assert loaded.action_tools_ == {"run_tactic": "tactic"}
    assert (loaded.transform(runs) == space.labels_).all()
    named = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False, action_field={"run_tactic": "tactic"})
    assert mx.StrategySpace.load(named.fit(runs).save(tmp_path / "named")).action_tools_ == {"run_tactic": "tactic"}


def test_a_typed_tool_relogged_through_act_is_read_by_the_command_it_runs(tmp_path):
    """`run_tactic(proof_state, tactic)` re-logged through one tool, its name first
    (`act(command='run_tactic 3 "rw [h] at h2"')`): the verb `run_tactic` runs a command line
    given as its one text argument and is read by it, as typed; the space saves and loads."""
    from mechanism.datasets.worlds.generic import command_text

    runs, truth = _tactic_runs()
    # a look at the statement first (`check`): the generic tool has more than one verb
    relogged = from_records([{**row, "n_rounds": row["n_rounds"] + 1, "steps": [
        make_step(tool="act", arguments=json.dumps({"command": f'check "lemma {row["question_id"]}"'}),
                  observation="Prop"),
        *(make_step(tool="act", arguments=json.dumps({"command": command_text("run_tactic",
                                                                             json.loads(s["arguments"]))}),
                    observation=s["observation"]) for s in row["steps"])]} for row in runs.to_dicts()])
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(relogged)
    assert space.action_tools_ == {"act": "command", "run_tactic": "@nested"}
    assert adjusted_rand_score(truth, space.labels_) == 1.0
    typed = render(runs, action_field={"run_tactic": "tactic"})["tools"].to_list()
    assert [t.removeprefix("check > ") for t in render(relogged, action_field=space.action_tools_)["tools"]] == typed
    loaded = mx.StrategySpace.load(space.save(tmp_path / "space"))
    assert (loaded.transform(relogged) == space.labels_).all()


def test_a_verb_whose_one_argument_is_no_command_line_keeps_its_name():
    """`search "Paris"`, `open_order W1` through `act`: the argument is what is asked about, its
    first words are the question's, not a vocabulary: the verbs are the reading."""
    rows, questions = [], []
    for q in range(8):
        place = ("Paris", "Lima", "Oslo", "Cairo", "Quito", "Hanoi", "Accra", "Bern")[q]
        for cmd in (f'search "{place} population"', f"open_order W{q}", f'search "{place} mayor 2020"',
                    f"open_order W{q + 10}"):
            rows.append([{"tool": "act", "arguments": json.dumps({"command": cmd}), "query": None}])
            questions.append(q)
    assert detect_action_tools(rows, questions) == {"act": "command"}


def _dispatcher_rows(calls_of_row, questions):
    """Each row's calls through one dispatcher, ``call_tool(name=<tool>, arguments={...})``."""
    return [[{"tool": "call_tool", "arguments": json.dumps({"name": t, "arguments": a}), "query": None}
             for t, a in calls] for calls in calls_of_row], questions


def test_a_dispatcher_that_names_the_tool_it_runs_is_read_as_that_tool():
    # MCP clients log `call_tool(name="search", arguments={...})`: every call one tool, and
    # read by that name alone every strategy collapses; each tool takes its own arguments
    ways = [[("search", {"query": "Paris hotels"}), ("get_hotel", {"hotel_id": "H1"}), ("book", {"hotel_id": "H1",
                                                                                              "date": "May 2"})],
            [("list_hotels", {"city": "Paris", "limit": 50}), ("book", {"hotel_id": "H2", "date": "May 3"})]]
    rows, questions = _dispatcher_rows([ways[i % 2] for i in range(12)], [i // 2 for i in range(12)])
    assert detect_action_tools(rows, questions) == {"call_tool": "name"}
    step = read_action(rows[0][1], "name")
    assert (step["tool"], json.loads(step["arguments"]), step["via"]) == ("get_hotel", {"hotel_id": "H1"}, "call_tool")
    # Cline's `use_mcp_tool(server_name, tool_name, arguments)`, the arguments as JSON text: the
    # field naming the most tools is the tool's name, the server's beside the arguments
    cline = [[{"tool": "use_mcp_tool", "query": None, "arguments": json.dumps(
        {"server_name": "travel" if t != "book" else "booking", "tool_name": t, "arguments": json.dumps(a)})}
        for t, a in calls] for calls in (ways[i % 2] for i in range(12))]
    assert detect_action_tools(cline, questions) == {"use_mcp_tool": "tool_name"}
    read = read_action(cline[0][2], "tool_name")
    assert read["tool"] == "book" and json.loads(read["arguments"]) == {"hotel_id": "H1", "date": "May 2",
                                                                          "server_name": "booking"}


def test_a_word_parameter_beside_an_object_of_fields_stays_a_typed_tool():
    # `update_ticket(status="closed", fields={...})`: the fields vary whatever the status, so the
    # status is a parameter of one tool, not the name of the tool a dispatcher runs
    rng = np.random.default_rng(0)
    keys = ("priority", "assignee", "tags", "due")
    rows = [[{"tool": "update_ticket", "query": None, "arguments": json.dumps(
        {"status": str(rng.choice(["open", "closed", "pending"])),
         "fields": dict.fromkeys(rng.choice(keys, size=int(rng.integers(1, 4)), replace=False), "x")})}
        for _ in range(3)] for _ in range(30)]
    assert detect_action_tools(rows, list(range(30))) == {}


def test_a_dispatcher_of_one_tool_is_read_only_where_that_tool_is_generic():
    # an MCP client of one shell: `call_tool(name="bash", arguments={"command": ...})`, read as
    # the shell's programs; a typed tool's constant word beside its object (`calendar="primary"`)
    # is a parameter, and the tool keeps its name
    runs, _ = _shell_runs()
    shell = [[{"tool": "call_tool", "query": None, "arguments": json.dumps(
        {"name": "bash", "arguments": json.loads(st["arguments"])})} for st in steps] for steps in runs["steps"]]
    questions = runs["question_id"].to_list()
    assert detect_action_tools(shell, questions) == {"call_tool": "name", "bash": "command"}
    events = [[{"tool": "create_event", "query": None, "arguments": json.dumps(
        {"calendar": "primary", "event": {"title": f"Meeting {q}", "start": "9:00"}})}] for q in questions]
    assert detect_action_tools(events, questions) == {}


def test_episodes_logged_through_a_dispatcher_read_as_the_typed_tools(tmp_path):
    # the same episodes through `call_tool(name=..., arguments={...})` read call for call as the
    # typed ones, a tool that is generic in turn (the todo agent's `Bash(command=...)`) included
    for world in (service(n_questions=20, random_state=0), todo(n_questions=12, random_state=0)):
        typed = render(_read(world, tmp_path))["tools"].to_list()
        for dispatched in (as_dispatched(world), as_dispatched(world, "use_mcp_tool", "tool_name",
                                                               arguments_as_text=True)):
            runs = _read(dispatched, tmp_path)
            assert render(runs)["tools"].to_list() == typed
            by_name = render(runs, action_field=None)["tools"].to_list()
            assert {t for seq in by_name if seq for t in seq.split(" > ")} <= {"call_tool", "use_mcp_tool"}
    # the fit reads it so and the report says so
    from mechanism.report.study import _reading_note

    runs = _read(as_dispatched(world), tmp_path)
    space = mx.StrategySpace(embedder=FAST, n_bootstrap=0, progress=False).fit(runs)
    assert space.action_tools_ == {"call_tool": "name", "bash": "command"}
    assert "call_tool by its name field" in _reading_note(space)
    loaded = mx.StrategySpace.load(space.save(tmp_path / "space"))  # saved, loaded and applied as fitted
    assert loaded.action_tools_ == space.action_tools_ and (loaded.transform(runs) == space.labels_).all()
    with pytest.raises(InputError, match="as_dispatched"):
        as_dispatched(multihop(n_questions=2, random_state=0))


def test_the_calls_an_agent_speaks_through_stay_as_they_are_when_re_logged(tmp_path):
    # the memory agent speaks to the user through `send_message` (its words, not a round): re-logged
    # through `act` or a dispatcher, it keeps its answers and gains no round
    world = memory(n_questions=6, random_state=0)
    typed = _read(world, tmp_path)
    for relogged in (as_generic_action(world), as_dispatched(world)):
        runs = _read(relogged, tmp_path)
        assert runs["answer"].to_list() == typed["answer"].to_list()
        assert render(runs)["tools"].to_list() == render(typed)["tools"].to_list()
