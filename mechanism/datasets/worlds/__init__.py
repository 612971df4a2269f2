"""Planted worlds for validating strategy discovery, written independently of the move grammar.

Each world is a generator of trajectories in its own native file format together with the
strategy that was planted in every trajectory (the truth). They are deliberately unlike the
built-in simulator (:mod:`mechanism.datasets.simulation`): other strategy families, other tools, call
counts that overlap between strategies, so a method tuned to one world is tested on the others.

- :func:`multihop`: a multi-hop search agent (Search-R1 tags, or ReAct text with
  ``react=True``) with six strategies: one search, a bridge chain, a chain that checks the
  answer it found, verbatim repeats, rewordings, parallel decomposition.
- :func:`service`: a customer-service agent in OpenAI ``tool_calls`` format with JSON
  arguments carrying user ids, order ids and e-mails; lookup and state-changing tools, error
  observations and retries; six strategies.
- :func:`webshop`: a web-shopping agent (ReAct actions inside chat messages; search, click,
  back, select, reviews, buy) with seven strategies, failed actions retried inside most of
  them, an optional step inside two, and the rl arm differing from base only in its mixture.
- :func:`analyst`: a data-analyst agent (OpenAI ``tool_calls``; list_tables, describe_table,
  sample_rows, run_sql, run_python) with seven strategies, failed calls fixed and retried inside
  every one that calls a tool, optional steps inside two; rl differs from base only in its mixture.
- :func:`coder`: a software-engineering agent fixing reported bugs in a repository (OpenAI
  ``tool_calls``; search_code, open_file, edit_file, run_tests, run_shell, submit) with seven
  strategies (edit blind, reproduce first, search-driven, regression test first, shell
  exploration, git history, give up), failed calls retried by the same tool inside every one
  that calls a tool, optional steps at fixed rates; rl differs from base only in its mixture.
  A held-out world, written without reference to segmentation or clustering.
- :func:`browser`: a web-navigation agent on an internal GitLab and web shop (WebArena-like;
  OpenAI ``tool_calls``; goto, click, type, scroll, read_page, go_back) with six strategies
  (answer from memory, site search, menu navigation, direct URL, scroll and scan, filter and
  sort), execution failures retried by the same tool inside every one that calls a tool,
  optional steps at fixed rates; rl differs from base only in its mixture. A held-out world,
  written without reference to segmentation or clustering.
- :func:`assistant`: a personal-assistant agent with e-mail, calendar and contacts tools (ATIF
  v1.4 documents; search_email, read_email, send_email, list_events, create_event,
  find_contact) with six strategies (no tools, act directly, calendar first, contact first,
  thread first, full diligence), execution failures retried by the same tool inside every one
  that calls a tool, optional steps at fixed rates; rl differs from base only in its mixture.
  A held-out world, written without reference to segmentation or clustering.
- :func:`travel`: a travel-booking agent (tau-bench airline / hotel-like; OpenAI
  ``tool_calls``; get_user, get_reservation, search_flights, search_hotels, book,
  change_reservation, cancel_reservation) on four kinds of request (change a flight date, book
  a hotel, cancel a trip, add a hotel to a booking) with seven strategies (no tools, act at
  once, profile first, reservation first, broad search, survey of the user's trips, verify
  after acting), execution failures retried by the same tool inside every one that calls a
  tool, optional steps at fixed rates; rl differs from base only in its mixture. A held-out
  world, written without reference to segmentation or clustering.
- :func:`gui`: a mobile-phone GUI agent (AndroidWorld-like; ReAct text; open_app, tap, type,
  swipe, back, home, read_screen, search_settings) on four kinds of phone task (a setting
  toggled, a message sent, a list item added, an alarm set) with seven strategies (ask the
  user, open the app directly, explore by swiping, settings search, read the screen before
  every action, go home and reopen, the notification shade), execution failures retried by the
  same action inside every one that acts, optional steps at fixed rates; rl differs from base
  only in its mixture. A held-out world, written without reference to segmentation or
  clustering.
- :func:`research`: a quantitative research agent answering numeric questions (growth rates,
  counts, unit conversions) in ReAct text transcripts (Search, Lookup, Calculate, Python,
  Paper) with seven strategies (answer from memory, search then compute, search and look up,
  paper database first, fetch then Python, double-check two ways, a search chain), execution
  failures retried by the same tool inside every one that calls a tool, optional steps at
  fixed rates; rl differs from base only in its mixture. A held-out world, written without
  reference to segmentation or clustering.
- :func:`sre`: an on-call SRE / incident-response agent (OpenAI ``tool_calls``; list_alerts,
  query_metrics, search_logs, get_deploys, describe_pod, rollback, restart, scale, post_status)
  on latency, error-rate and capacity incidents with seven strategies (advice without tools,
  blind restart, metrics then act, log deep dive, recent-deploy rollback, pod triage, escalate
  only), execution failures retried by the same tool inside every one that calls a tool,
  optional steps at fixed rates, the mixture tilted mildly by the kind of incident for two
  strategies; rl differs from base only in its mixture. A held-out world, written without
  reference to segmentation or clustering.
- :func:`sheet`: a spreadsheet / office agent (ATIF v1.4 documents; list_sheets, read_range,
  find, write_range, set_formula, sort, filter, create_chart, run_macro) on lookups, computed
  columns, #REF! fixes and charts with seven strategies (answer from the prompt, read every
  sheet, find then read, helper formulas, a macro, sort / filter then read the top, read in
  small windows), execution failures retried by the same tool inside every one that calls a
  tool, optional steps at fixed rates, a finishing step set by the kind of task; rl differs
  from base only in its mixture. A held-out world, written without reference to segmentation
  or clustering.
- :func:`toolbench`: a ToolBench / RapidAPI-style API-calling agent (OpenAI ``tool_calls``;
  fourteen tools from weather, geo, finance, travel, news and utility APIs) on single, chained
  and comparison requests with seven strategies (answer from memory, one call, resolve-and-feed
  chain, fan-out, over-call, verify with another API, give up after errors), execution failures
  retried by the same tool inside every one that calls a tool and does not give up, optional
  steps at fixed rates, the mixture tilted mildly towards fan-out on comparison requests; rl
  differs from base only in its mixture. A held-out world, written without reference to
  segmentation or clustering.

- :func:`terminal`: a terminal agent with ONE tool, ``bash(command)`` (OpenAI ``tool_calls``;
  the program is the verb: ls, find, cat, grep, sed, python3, perl, pytest, git, pip) fixing a
  failing test or a crashing command, with seven strategies (explore then edit, grep-driven
  localisation, reproduce first, blind edits retried after failing checks, read many files,
  git history, set up the environment first), failed commands (``bash: gerp: command not
  found``, ``No such file or directory``, a non-zero ``[exit code: N]``) followed by the
  corrected command, optional steps at fixed rates; rl differs from base only in its mixture.
  A held-out world, written without reference to segmentation or clustering.
- :func:`computer`: a computer-use agent with ONE tool, ``computer`` whose ``action`` names the
  action (ATIF v1.4; screenshot, left_click, mouse_move, type, key, scroll, wait; Anthropic
  computer-use style) on desktop applications, with seven strategies (keyboard shortcuts, menu
  navigation, the application's command search, exploring wrong menus first, toolbar tooltips,
  a screenshot after every action, blind with waits), actions that had no effect answered by
  one fixed text (:data:`mechanism.datasets.worlds.computer.NOTHING`) and made again corrected, optional
  steps at fixed rates; rl differs from base only in its mixture. A held-out world, written
  without reference to segmentation or clustering.
- :func:`interpreter`: a tool-integrated math-reasoning agent (ToRL / ReTool / SimpleTIR-like)
  with ONE tool, ``python(code)`` (OpenAI ``tool_calls``; the result is the program's stdout,
  a traceback or a timeout), on counting, number-theory, algebra, probability, sequence and
  lattice-geometry word problems, with seven strategies (no code, calculate the final
  arithmetic, brute force, sympy, Monte Carlo simulation, derive then verify, stepwise
  programs feeding printed values forward), failed programs (a missing import, ``import
  sympi``, a ``SyntaxError``, a ``TimeoutError``) followed by the corrected program, optional
  steps at fixed rates; rl differs from base only in its mixture. A held-out world, written
  without reference to segmentation or clustering.
- :func:`sql`: a text-to-SQL / database agent (BIRD / Spider 2.0-like) with ONE tool,
  ``sql_db_query(query)`` (LangChain's name; OpenAI ``tool_calls``; the result is the rows as
  the sqlite3 shell prints them, or SQLite's error as LangChain reports it), answering analytics
  questions about four SQLite databases (a shop, flights, a university, music streaming) built
  when the world is generated, with seven strategies (no query, the final query at once, the
  catalog first, sample rows first, decomposition into small queries feeding values forward,
  probing the filter columns' values, verifying with a differently written query), failed
  statements (``no such column``, ``no such table``, a syntax error, an ambiguous column,
  another dialect's date functions, a timed-out cross join) followed by the corrected
  statement, optional steps at fixed rates; rl differs from base only in its mixture. A
  held-out world, written without reference to segmentation or clustering.
- :func:`support`: a dual-control technical-support agent for a mobile carrier (tau2-bench
  telecom-like; OpenAI ``tool_calls``; get_customer, get_line_details, get_data_usage,
  check_network_status, enable_roaming, refuel_data, enable_feature, reprovision_sim,
  reset_network_settings, open_ticket, transfer_to_human) on five kinds of phone problem (no
  mobile data, no data abroad, MMS, no service after a SIM swap, Wi-Fi calling), where the
  phone is the user's: the agent asks the user to check and change things on the device, and
  the user's replies are ``user`` messages between the tool calls. Seven strategies (account
  first, device first, outage first, a fixed checklist, a quick remote fix, escalate early,
  hypothesis testing), the kind of issue deciding only which fix ends an episode; execution
  failures (``Error: ...`` lines, JSON errors, a 503 status line) followed by the corrected call
  of the same tool, optional steps at fixed rates, off-script user replies, a phone number given
  up front or only when asked; rl differs from base only in its mixture. A held-out world,
  written without reference to segmentation or clustering.
- :func:`parallel`: a deep-research agent answering multi-part factual questions (comparisons,
  aggregates over several entities, multi-hop questions) with OpenAI PARALLEL function calling
  (``tool_calls`` lists of two to four calls, each answered by its own ``tool`` message;
  web_search, open_page, calculator, lookup_entity), with seven strategies (answer from memory,
  parallel fan-out of searches, the same searches one per message, fan-out then parallel page
  reads, one broad search then reading, a search-then-read chain, a draft verified by a parallel
  batch of knowledge-base lookups) whose grouping of calls into messages is part of what defines
  them, failed calls retried in the next message (a failed call of a batch alone), optional steps
  at fixed rates; rl differs from base only in its mixture. A held-out world, written without
  reference to segmentation or clustering.
- :func:`codeact`: a CodeAct agent (smolagents ``CodeAgent``-like) whose actions are Python
  programs calling five tools as functions (``Thought:`` / ``Code:`` and a fenced program ended by
  ``<end_code>``, ``Observation:`` with the execution logs; format ``react``; list_warehouses,
  check_stock, get_price, quote_shipping, convert_currency) on logistics questions (the soonest
  warehouse, the cheapest total, a stock's value in another currency), with seven strategies
  (one call per program, a loop of one tool per program, tools chained per warehouse, one
  program doing everything, no tools, one probe of a tool's output then everything, a draft
  then a verification pass) whose grouping of calls into programs is part of what defines them;
  the programs really run, failed programs (``NameError``, ``KeyError``, ``TypeError``, a tool's
  ``Error: ...``, a timeout) followed by the corrected program, optional steps at fixed rates;
  rl differs from base only in its mixture. A held-out world, written without reference to
  segmentation or clustering.
- :func:`handoff`: an airline's multi-agent support system (OpenAI Agents SDK / Swarm-like): a
  triage agent and four specialists in one ``tool_calls`` transcript, control passed by
  ``transfer_to_<agent>`` handoffs (result ``{"assistant": ...}``, each assistant message named)
  or a specialist consulted as a tool (``ask_<agent>``), with seven orchestration strategies
  (triage alone, a direct handoff, facts gathered then a handoff, specialists as tools, a wrong
  handoff bounced back, a chain of two specialists, escalation to a human), the request's kind
  deciding which specialist's tools end it; failures retried by the same tool, optional steps at
  fixed rates; rl differs from base only in its mixture. A held-out world, written without
  reference to segmentation or clustering.
- :func:`todo`: a coding agent (Claude Code / Codex CLI-like: ``Read``, ``Grep``, ``Glob``, ``Edit``,
  ``Write``, ``Bash``) that keeps a todo list (``TodoWrite``, pure bookkeeping) and delegates to
  sub-agents (``Task``), with seven ways of working (read-edit-test, the failing test first, a
  sub-agent's search first, a todo plan worked item by item, a new test written first, broad
  exploration before the first edit, a sub-agent's review after the fix); ``TodoWrite`` calls and
  ``git status`` / ``git diff`` at random points whatever the strategy, optional steps, failed
  edits, reads and test commands followed by the corrected call; rl differs from base only in its
  mixture. A held-out world, written without reference to segmentation or clustering.
- :func:`memory`: a stateful assistant with long-term memory (MemGPT / Letta-like: core memory
  blocks, ``archival_memory_search`` / ``_insert``, ``conversation_search`` / ``_date``,
  ``core_memory_append`` / ``_replace``) that speaks to the user only through ``send_message``,
  its own text an inner monologue, with seven strategies (answer from core memory, archival
  search, recall search, recall by date, both stores, consolidate into core memory, a clarifying
  question first); failures retried by the same tool, optional steps at fixed rates (an insert of
  a fact mentioned in passing, a second page, thought-only turns); rl differs from base only in
  its mixture. A held-out world, written without reference to segmentation or clustering.
- :func:`swebash`: a software-engineering agent fixing GitHub issues through one bash command a
  turn, logged as mini-swe-agent logs it (``trajectory_format: "mini-swe-agent-1"``: fenced
  commands, ``<returncode>`` / ``<output>`` replies, refused turns, timeouts, the submitted patch,
  runs stopped by the step limit), with seven strategies (reproduce first, grep to the edit,
  follow the failing test, read whole files, git history first, a regression test first, a blind
  patch); failed commands followed by the corrected one, optional steps at fixed rates (a first
  look around, a review of the diff before submitting); rl differs from base only in its mixture.
  A held-out world, written without reference to segmentation or clustering.
- :func:`sokoban`: a grid-puzzle agent trained with multi-turn RL (RAGEN / verl-agent Sokoban-like;
  OpenAI ``tool_calls``; move(direction) with several moves in one message as parallel calls,
  look, valid_moves, undo, reset) on small Sokoban levels generated by reverse play and solved
  by search, every move simulated on the text board, with seven ways of playing (plan the whole
  solution then execute it in batches, one greedy move at a time, survey the board and check
  every push, trial and error with undo, wall-hugging lap first, look after every push, push at
  once until stuck then reset); blocked moves and unknown directions answered by fixed messages
  and followed by the corrected move, optional steps at fixed rates (an opening look, a look
  between moves, a step aside and back); rl differs from base only in its mixture. A held-out
  world, written without reference to segmentation or clustering.

- :func:`leanprover`: a Lean 4 theorem-proving agent trained with multi-turn RL (OpenAI ``tool_calls``;
  run_tactic(proof_state, tactic) on a tactic-mode REPL answering in its JSON, search_lemmas,
  check) on competition-style theorems drawn from six templates (ℕ identities and linear systems,
  divisibility, congruences, AM-GM style inequalities over ℝ, list lengths), every goal text
  following from the theorem and the tactics applied, proof states numbered as the REPL numbers
  them, with seven ways of proving (automation first, induction, a rewrite chain, case analysis,
  backward reasoning with apply, lemma search first, decomposition into have steps); tactics sent
  with a wrong lemma name, a typo or a missing bracket followed by the corrected tactic on the same
  state, optional steps at fixed rates (a check of the statement, a lemma search, a detour and a
  return to an earlier state, a confirming re-run); rl differs from base only in its mixture. A
  held-out world, written without reference to segmentation or clustering.

:func:`as_generic_action` re-logs any world's episodes through one generic tool
(``act(command="search Paris")``, ``act(command="get_order_details W1")``) with the same truth:
``openai`` and ``atif`` worlds in their own format, any other as OpenAI ``tool_calls``;
:func:`as_dispatched` through one dispatcher that names the tool it runs, its arguments beside
(``call_tool(name="search", arguments={"query": "Paris"})``, as MCP clients log calls).

Every world returns a :class:`World`, a :class:`PlantedWorld` as the simulator's
:class:`~mechanism.datasets.simulation.Simulation` is: ``world.runs`` (read back from the native records
with ``mechanism.read``), ``world.truth`` (``arm, question_id, sample_id, strategy``),
``world.planted`` (the expected values) and ``world.labels_for(runs)`` (:func:`join_truth`);
``world.write(folder)`` writes the native file that ``mechanism.read`` takes. Generators take
``random_state`` (int, numpy Generator or None).
"""
from __future__ import annotations

from mechanism.datasets.worlds._base import (
                                    TRUTH_KEYS,
                                    PlantedWorld,
                                    TruthJoin,
                                    World,
                                    chat_world,
                                    join_truth,
                                    mixture_planted,
)
from mechanism.datasets.worlds.analyst import analyst
from mechanism.datasets.worlds.assistant import assistant
from mechanism.datasets.worlds.browser import browser
from mechanism.datasets.worlds.codeact import codeact
from mechanism.datasets.worlds.coder import coder
from mechanism.datasets.worlds.computer import computer
from mechanism.datasets.worlds.generic import as_dispatched, as_generic_action
from mechanism.datasets.worlds.gui import gui
from mechanism.datasets.worlds.handoff import handoff
from mechanism.datasets.worlds.interpreter import interpreter
from mechanism.datasets.worlds.leanprover import leanprover
from mechanism.datasets.worlds.memory import memory
from mechanism.datasets.worlds.multihop import multihop
from mechanism.datasets.worlds.parallel import parallel
from mechanism.datasets.worlds.research import research
from mechanism.datasets.worlds.rest import rest
from mechanism.datasets.worlds.service import service
from mechanism.datasets.worlds.sheet import sheet
from mechanism.datasets.worlds.sokoban import sokoban
from mechanism.datasets.worlds.sql import sql
from mechanism.datasets.worlds.sre import sre
from mechanism.datasets.worlds.support import support
from mechanism.datasets.worlds.swebash import swebash
from mechanism.datasets.worlds.terminal import terminal
from mechanism.datasets.worlds.textgame import textgame
from mechanism.datasets.worlds.todo import todo
from mechanism.datasets.worlds.toolbench import toolbench
from mechanism.datasets.worlds.travel import travel
from mechanism.datasets.worlds.webshop import webshop

WORLDS = ("multihop", "multihop_react", "service", "webshop", "analyst", "coder", "browser", "assistant", "travel",
          "research", "gui", "sre", "sheet", "toolbench", "terminal", "computer", "rest",
          "textgame", "interpreter", "sql", "support", "parallel", "codeact", "handoff", "todo", "memory", "swebash",
          "sokoban", "leanprover")

__all__ = ["World", "analyst", "as_dispatched", "as_generic_action", "assistant", "browser", "codeact", "coder",
           "computer", "PlantedWorld", "TruthJoin", "join_truth", "TRUTH_KEYS", "chat_world", "gui", "handoff",
           "interpreter", "leanprover", "memory", "mixture_planted", "multihop", "parallel", "research", "rest",
           "service", "sheet", "sokoban", "sql", "sre", "support", "swebash", "terminal", "textgame", "todo",
           "toolbench", "travel", "webshop", "WORLDS"]
