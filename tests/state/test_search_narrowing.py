"""Search-as-you-type narrows the previous scan (issue 15, keystroke): each key typed at the end
of a word answers from the last answer's rows while nothing is committed -- and must answer
exactly what a fresh search answers."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_state import SessionDB
from hermes_state.search import TUNING, forget_answers
from hermes_state.search import engine as engine_mod
from hermes_state.search import light as light_mod
from hermes_state.search import memo as memo_mod
from hermes_state.search import narrowing as narrowing_mod
from hermes_state.search import prefixes as prefixes_mod
from hermes_state.visibility import INTERNAL_SOURCES

from corpus_helpers import corpora_in_both_layouts

TYPED = ("docker", "kubernetes", "deploy fail", "the server", "nginx conf", "python error", "config ")


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    return corpora_in_both_layouts(tmp_path_factory, "narrow", messages=8000, seed=3)


@pytest.fixture
def small_window(monkeypatch):
    """The window ranking and a window cut at its cap, on a corpus of thousands: what 1M
    messages do with the real sizes (400 rows, exact bm25 up to 3,000)."""
    monkeypatch.setattr(TUNING, "WINDOW", 40)
    monkeypatch.setattr(TUNING, "EXACT_BM25_MAX_ROWS", 60)


def forget(db: SessionDB) -> None:
    """Drop what ``db``'s connection kept from earlier searches: the next one starts afresh."""
    memo_mod.forget_everything(db.store)


def answer(result):
    return (
        [(h.id, h.snippet, tuple(map(tuple, h.spans)), h.score) for h in result.hits],
        result.total_estimate, result.total_exact, result.has_more, result.ranking, result.path,
        result.effective_query,
    )


def search(db, text, limit=20, **kw):
    kw.setdefault("sort", "auto")  # (a keystroke's search: what narrowing serves)
    return db.search(text, limit=limit, prefix_last=True, exclude_sources=list(INTERNAL_SOURCES), **kw)


def traced(db, fn):
    statements: list[str] = []
    db._read(lambda conn: conn.set_trace_callback(statements.append))
    try:
        return fn(), statements
    finally:
        db._read(lambda conn: conn.set_trace_callback(None))


def narrowings(statements):
    """The index-only statements that find a narrower query's matches among the last rows."""
    return [s for s in statements if re.search(r"MATCH .* AND rowid >= \d+$", s)]


def window_scans(statements):
    """The statements that read matches with their text newest first."""
    return [s for s in statements if "ORDER BY messages_fts.rowid DESC" in s]


def scanned_afresh(statements) -> bool:
    """Whether a search read its window from the newest match down (not only below a row)."""
    return any(not re.search(r"rowid < \d+", s) for s in window_scans(statements))


def docke_after_dock(path):
    """``docke`` typed after ``dock`` on one connection: its answer, its statements and the
    rowids of its window; with the answer of a fresh search on another connection."""
    reader = SessionDB(path, read_only=True)
    fresh = SessionDB(path, read_only=True)
    try:
        search(reader, "dock")
        got, statements = traced(reader, lambda: search(reader, "docke"))
        window = {rowid for rowid, _text in memo_mod.kept_for(reader.store).scan.rows}
        return got, statements, window, answer(search(fresh, "docke"))
    finally:
        reader.close()
        fresh.close()


@pytest.mark.parametrize("schema", [16, 30])
def test_every_key_typed_answers_as_a_fresh_search_does(corpora, small_window, schema):
    typing = SessionDB(corpora[schema], read_only=True)
    fresh = SessionDB(corpora[schema], read_only=True)
    narrowed = asked = 0
    rankings = set()
    try:
        for text in TYPED:
            for end in range(1, len(text) + 1):
                typed = text[:end]
                got, statements = traced(typing, lambda: search(typing, typed))
                if window_scans(statements) or narrowings(statements) or got.hits:
                    narrowed += not scanned_afresh(statements)
                    asked += bool(narrowings(statements))
                forget(fresh)
                expected = search(fresh, typed)
                assert answer(got) == answer(expected), typed
                rankings.add(got.ranking)
    finally:
        typing.close()
        fresh.close()
    # Not vacuous: keys were narrowed, over windows ranked and cut at their cap, mostly
    # without asking FTS5 which rows still match.
    assert narrowed >= 15
    assert asked < narrowed
    assert {"bm25-recent-window", "bm25"} <= rankings


def test_a_narrowed_key_reads_no_window_again(corpora, small_window):
    """``docke`` after ``dock`` finds its rows among ``dock``'s (older matches are read only to
    fill the window where ``dock*``'s had more than ``docke*``'s); the same query again (a
    page, a repaint) reads no window at all."""
    db = SessionDB(corpora[30], read_only=True)
    try:
        search(db, "dock")
        result, statements = traced(db, lambda: search(db, "docke"))
        assert result.ranking == "bm25-recent-window" and result.hits
        assert not scanned_afresh(statements)
        _again, statements = traced(db, lambda: search(db, "docke"))
        assert window_scans(statements) == [] and narrowings(statements) == []
    finally:
        db.close()


def test_rows_that_matched_in_their_tool_calls_are_told_apart(corpora, tmp_path, small_window):
    """v30 also indexes tool names and tool calls, which ``highlight()`` of the text does not
    mark: a row whose text lacks the longer word is kept when its tool calls hold it (read
    from ``messages``, an ASCII text's tokens being its runs of letters and digits), dropped
    when they do not, and FTS5 is asked when such a value is not ASCII."""
    import shutil

    path = tmp_path / "state.db"
    shutil.copy(corpora[30], path)
    store = SessionDB(path)
    try:
        store.create_session("tools", "cli")
        kept = store.append_message("tools", "assistant", "the dockyard crane",
                                    tool_calls=[{"name": "terminal", "arguments": {"cmd": "docker ps"}}])
        dropped = store.append_message("tools", "assistant", "the dockyard crane",
                                       tool_calls=[{"name": "terminal", "arguments": {"cmd": "dockyard"}}])
    finally:
        store.close()
    got, statements, window, expected = docke_after_dock(path)
    assert kept in window and dropped not in window
    assert not scanned_afresh(statements) and narrowings(statements) == []
    assert answer(got) == expected
    store = SessionDB(path)
    try:
        # (Tool calls are stored as JSON with ASCII escapes, as upstream does; a tool's name
        # is stored as given.)
        store.append_message("tools", "tool", "the dockyard crane", tool_name="道具")
    finally:
        store.close()
    reader = SessionDB(path, read_only=True)
    try:
        search(reader, "dock")
        got, statements = traced(reader, lambda: search(reader, "docke"))
        assert narrowings(statements)  # a tool name that is not ASCII: FTS5 tells
        forget(reader)
        assert answer(got) == answer(search(reader, "docke"))
    finally:
        reader.close()


@pytest.fixture
def db(tmp_path):
    store = SessionDB(tmp_path / "state.db")
    yield store
    store.close()


def add_many(db, sid, contents, source="cli"):
    if db.get_session(sid) is None:
        db.create_session(sid, source)
    return [db.append_message(sid, "user", text) for text in contents]


def test_a_commit_between_keys_is_seen(db, tmp_path, small_window):
    add_many(db, "s", [f"docker build number {i}" for i in range(60)] + ["dockyard crane"] * 30)
    reader = SessionDB(tmp_path / "state.db", read_only=True)
    try:
        search(reader, "dock")
        newest = add_many(db, "t", ["dockerfile lint failed"])[0]
        result, statements = traced(reader, lambda: search(reader, "docke"))
        assert narrowings(statements) == [] and window_scans(statements)  # scanned afresh
        assert newest in [hit.id for hit in result.hits]
        forget(reader)
        assert answer(search(reader, "docke")) == answer(result)
    finally:
        reader.close()


def test_other_filters_are_not_narrowed_from(db, tmp_path, small_window):
    add_many(db, "a", [f"docker on cli {i}" for i in range(50)], source="cli")
    add_many(db, "b", [f"docker on telegram {i}" for i in range(50)], source="telegram")
    reader = SessionDB(tmp_path / "state.db", read_only=True)
    try:
        reader.search("dock", limit=20, prefix_last=True, source_filter=["cli"], sort="auto")
        got = reader.search("docke", limit=20, prefix_last=True, source_filter=["telegram"], sort="auto")
        assert {hit.source for hit in got.hits} == {"telegram"}
        forget(reader)
        expected = reader.search("docke", limit=20, prefix_last=True, source_filter=["telegram"], sort="auto")
        assert answer(got) == answer(expected)
    finally:
        reader.close()


def test_highlights_are_trimmed_to_the_narrower_query(db, tmp_path, small_window):
    """``dock*`` marks ``dockyard``; ``docker*`` must mark only what FTS5 would: glued CJK
    tokens (one unicode61 token) and words with diacritics (``Dockér`` folds to ``docker``)
    answer as a fresh search does, narrowed or not."""
    from hermes_state.folding import fold

    texts = (
        [f"docker and dockyard and dockers {i}" for i in range(40)]
        + [f"nginxの設定 with docker {i}" for i in range(20)]
        + [f"Dockér déploiement {i}" for i in range(10)]
    )
    add_many(db, "s", texts)
    reader = SessionDB(tmp_path / "state.db", read_only=True)
    fresh = SessionDB(tmp_path / "state.db", read_only=True)
    try:
        for typed in ("doc", "dock", "docke", "docker", "docker n", "docker ngi", "docker nginx"):
            got = search(reader, typed)
            forget(fresh)
            assert answer(got) == answer(search(fresh, typed)), typed
        got = search(reader, "docker", sort="newest")
        marked = {hit.snippet[a:b] for hit in got.hits for a, b in hit.spans}
        assert "dockyard" not in marked and {fold(piece)[:6] for piece in marked} == {"docker"}
    finally:
        reader.close()
        fresh.close()


#: Texts around the words ``docker`` / ``dock*`` as users write them: case, digits, every ASCII
#: separator (the underscore among them), CJK glued to ASCII, emoji with variation selectors
#: and joiners, curly quotes, non-breaking and ideographic spaces -- and the characters only
#: unicode61 can tell: diacritics precomposed and combining, the Kelvin sign and long s that
#: Python's case-insensitive ASCII matches, private use, fullwidth and Cyrillic letters.
HOSTILE_TEXTS = [
    "Docker docker DOCKER dockers dockyard dock",
    "docker_compose docker-compose docker.compose docker/compose (docker) [dock]",
    "docker2 2docker d0cker docker's \"docker\" `docker` #docker @dock",
    "nginxの設定 with docker and 服务端docker and docker服务端 and 修改youer服务端",
    "docker 🐳 ❤️docker docker✔️ 👨\u200d👩\u200d👧 docker\u200bdock \u00a0docker\u3000docker",
    "\u201cdocker\u201d \u2014docker\u2014 \u00abdock\u00bb docker\u2026 ・docker・",
    "Dockér dócker do\u0301cker docke\u0301r dock\u0307er",
    "\u212aubernetes dock\u212aer \u017fdocker doc\u017fker",
    "docker\ue000 \ue001docker dock\uf8ffer",
    "\uff44\uff4f\uff43\uff4b\uff45\uff52 docker\u0434 \u0434docker",
    "",
    "   ",
]
WORDS = [("docker", False), ("dock", True), ("docke", True), ("dockers", False), ("nginx", True),
         ("nginx", False), ("youer", False), ("compose", False), ("kubernetes", False)]


@pytest.fixture(scope="module")
def word_index():
    """A real unicode61 index (as upstream declares it) over :data:`HOSTILE_TEXTS`."""
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(content)")
    conn.executemany("INSERT INTO t(rowid, content) VALUES (?, ?)", list(enumerate(HOSTILE_TEXTS, 1)))
    yield conn
    conn.close()


def term_spans(text: str, word: str, prefix: bool):
    """Where the search finds one word in ``text`` without FTS5."""
    return [found.span() for found in light_mod.term_regex(word, prefix).finditer(text.lower())]


def fts5_marks(conn, text_rowid: int, word: str, prefix: bool):
    """What FTS5 says of one row for one word: whether it matches, and highlight()'s spans."""
    from hermes_state.query import split_marked

    row = conn.execute(
        "SELECT highlight(t, 0, char(2), char(3)) FROM t WHERE t MATCH ? AND rowid = ?",
        (f'"{word}"' + ("*" if prefix else ""), text_rowid),
    ).fetchone()
    if row is None:
        return False, []
    return True, split_marked(row[0])[1]


@pytest.mark.parametrize(("word", "prefix"), WORDS)
def test_text_marked_without_fts5_is_marked_as_fts5_marks_it(word_index, word, prefix):
    """A narrowed key decides which rows still match, and a page of plain words marks its
    rows, without ``highlight()``: on every text ``_marks_exactly`` vouches for, the word's
    matches are the tokens FTS5 matches and marks; every other text is left to FTS5."""
    vouched = 0
    for rowid, text in enumerate(HOSTILE_TEXTS, 1):
        matches, marks = fts5_marks(word_index, rowid, word, prefix)
        if not light_mod.marks_exactly(text):
            continue
        vouched += 1
        spans = term_spans(text, word, prefix)
        assert (bool(spans), spans) == (matches, marks), (text, word, prefix)
    assert vouched >= 6  # ASCII, CJK, emoji, quotes and spaces are all vouched for


def test_what_only_unicode61_can_tell_is_left_to_fts5():
    for text in ("Dockér", "do\u0301cker", "\u212aubernetes", "\u017fdocker", "docker\ue000",
                 "\uff44ocker", "docker\u0434", "caf\u00e9 docker"):
        assert not light_mod.marks_exactly(text), text
    for text in ("docker", "nginxの設定 docker", "docker ❤️ 👨\u200d👩\u200d👧", "\u201cdocker\u201d\u3000服务端",
                 "서버 docker", "サーバー docker"):
        assert light_mod.marks_exactly(text), text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(
    ["docker", "Dock", "DOCKER", "dockyard", "d", "ock", "er", "2", "_", "-", " ", ".", "'", "\n",
     "の", "服务", "ー", "🐳", "\ufe0f", "\u200d", "\u00a0", "\u3000", "\u201c", "é", "\u0301",
     "\u212a", "\ue000", "\u0434", "\uff44"]), max_size=14).map("".join),
    st.sampled_from(WORDS))
def test_any_text_vouched_for_is_marked_as_fts5_marks_it(text, word):
    """The same as above over generated text, each checked against a real FTS5 table."""
    import sqlite3

    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(content)")
        conn.execute("INSERT INTO t(rowid, content) VALUES (1, ?)", (text,))
        matches, marks = fts5_marks(conn, 1, *word)
        if light_mod.marks_exactly(text):
            spans = term_spans(text, *word)
            assert (bool(spans), spans) == (matches, marks)
    finally:
        conn.close()


def test_only_words_anded_together_narrow():
    from hermes_state.query import parse_fts_query

    shape = narrowing_mod.query_shape
    assert shape(parse_fts_query("deploy fai*")) == (("deploy", False), ("fai", True))
    for text in ('"deploy fail"', "deploy OR fail", "deploy NOT fail", "déploie", "服务器"):
        assert shape(parse_fts_query(text)) is None, text
    narrows = narrowing_mod.narrows
    assert narrows((("dock", True),), (("docke", True),))
    assert narrows((("deploy", True),), (("deploy", False),))
    assert not narrows((("do", False),), (("doc", True),))  # an exact word is not a prefix
    assert not narrows((("docker", True),), (("dock", True),))  # deleting widens
    assert not narrows((("deploy", False), ("fa", True)), (("deploy", True), ("fai", True)))


def test_forget_answers_makes_a_repeated_query_do_its_work_again(corpora, small_window):
    """What the bench calls before each timed search: the window is scanned again, while the
    prefix expansions stay cached (as they do while typing)."""
    db = SessionDB(corpora[30], read_only=True)
    try:
        first = search(db, "dock")
        forget_answers(db.store)
        again, statements = traced(db, lambda: search(db, "dock"))
        assert answer(again) == answer(first)
        assert window_scans(statements) and not [s for s in statements if "hermes_search_word_terms" in s]
    finally:
        db.close()


def test_a_narrowing_that_reads_older_rows_reads_some_more_for_the_next_key(db, tmp_path, small_window):
    """Reading older matches is a MATCH statement (its terms sought in every segment): when a
    narrowing must, it reads NARROW_SLACK rows more, and the next key, dropping fewer than
    that, reads nothing."""
    texts = []
    for i in range(300):
        texts.append("dockyard crane" if i % 10 == 0 else "dockets filed" if i % 7 == 0 else f"docker build {i}")
    add_many(db, "s", texts)
    reader = SessionDB(tmp_path / "state.db", read_only=True)
    fresh = SessionDB(tmp_path / "state.db", read_only=True)
    try:
        search(reader, "dock")
        _got, statements = traced(reader, lambda: search(reader, "docke"))
        assert window_scans(statements) and not scanned_afresh(statements)  # older rows read
        got, statements = traced(reader, lambda: search(reader, "docker"))  # drops the dockets
        assert window_scans(statements) == [] and narrowings(statements) == []
        assert answer(got) == answer(search(fresh, "docker"))
        assert {hit.snippet[a:b] for hit in got.hits for a, b in hit.spans} == {"docker"}
    finally:
        reader.close()
        fresh.close()


def hit_reads(statements):
    """The statements that read the hits' messages and sessions (see ``_hits``)."""
    return [s for s in statements if "FROM messages m LEFT JOIN sessions s" in s]


def tool_column_reads(statements):
    """The statements that read the tool columns of rows a narrowing cannot tell by their text."""
    return [s for s in statements if re.match(r"SELECT id, tool_name, tool_calls FROM messages WHERE id IN", s)]


def test_a_key_that_keeps_the_page_reads_neither_its_hits_nor_tool_columns_again(corpora, tmp_path, small_window):
    """Typing the rest of a word mostly leaves the page as it was: its hits are the last
    answer's (no read of their messages and sessions), and a message whose tool calls were
    tokenized for the last key is not read again -- until something is committed: a session
    renamed between two keys shows its new title."""
    import shutil

    path = tmp_path / "state.db"
    shutil.copy(corpora[30], path)
    store = SessionDB(path)
    try:
        store.create_session("tools", "cli")
        for i in range(3):
            store.append_message("tools", "assistant", f"the dockyard crane {i}",
                                 tool_calls=[{"name": "terminal", "arguments": {"cmd": f"docker ps {i}"}}])
    finally:
        store.close()
    reader = SessionDB(path, read_only=True)
    fresh = SessionDB(path, read_only=True)
    try:
        search(reader, "dock")
        docke, statements = traced(reader, lambda: search(reader, "docke"))
        read_before = {int(n) for s in tool_column_reads(statements) for n in re.findall(r"\d+", s)}
        assert read_before, "rows told apart by their tool calls"
        docker, statements = traced(reader, lambda: search(reader, "docker"))
        assert answer(docker) == answer(search(fresh, "docker"))
        assert [h.id for h in docker.hits] == [h.id for h in docke.hits]
        assert hit_reads(statements) == []
        assert all(h is k for h, k in zip(docker.hits, docke.hits))  # the same hits, not rebuilt
        read_again = {int(n) for s in tool_column_reads(statements) for n in re.findall(r"\d+", s)}
        assert not read_again & read_before
        # A commit (a rename): what was kept is dropped, the hit shows the new title.
        top = docker.hits[0]
        writer = SessionDB(path)
        try:
            writer.set_session_title(top.session_id, "Renamed between two keys")
        finally:
            writer.close()
        again, statements = traced(reader, lambda: search(reader, "docke"))
        assert hit_reads(statements)
        assert next(h for h in again.hits if h.id == top.id).session_title == "Renamed between two keys"
        again = search(reader, "docker")
        assert next(h for h in again.hits if h.id == top.id).session_title == "Renamed between two keys"
        forget(fresh)
        assert answer(again) == answer(search(fresh, "docker"))
    finally:
        reader.close()
        fresh.close()


def test_a_tool_column_that_is_not_text_is_left_to_fts5(corpora, tmp_path, small_window):
    """Another program may store a number or a blob where upstream stores JSON text: FTS5
    indexes it as SQLite renders it, which Python's rendering need not match, so FTS5 says
    whether such a row still matches (and the answer is a fresh search's)."""
    import shutil
    import sqlite3

    path = tmp_path / "state.db"
    shutil.copy(corpora[30], path)
    conn = sqlite3.connect(path)
    try:
        sid = conn.execute("SELECT id FROM sessions LIMIT 1").fetchone()[0]
        conn.execute(
            "INSERT INTO messages (session_id, role, content, tool_calls, timestamp) "
            "VALUES (?, 'assistant', 'the dockyard crane', ?, 1767225000.0)",
            (sid, b"docker"),
        )
        conn.commit()
    finally:
        conn.close()
    got, statements, _window, expected = docke_after_dock(path)
    assert narrowings(statements) and not scanned_afresh(statements)
    assert answer(got) == expected


def without_light(monkeypatch):
    """Searches as before the plain-text scan: every query marked by ``highlight()`` (no
    query shape: nothing read plain, nothing narrowed)."""
    monkeypatch.setattr(engine_mod, "narrowable", lambda caps, parsed: None)
    monkeypatch.setattr(engine_mod, "lightable", lambda caps, parsed: False)


@pytest.mark.parametrize("schema", [16, 30])
def test_plain_word_searches_answer_as_highlight_did(corpora, small_window, schema, monkeypatch):
    """On the generated corpus (ASCII and CJK: every row marked without FTS5) a search of
    plain words read plain answers exactly as the same search marked by ``highlight()``:
    the same hits, snippets, marks and scores, in the same order."""
    typed = ["dock", "docker", "kube", "kubernetes", "deploy fai", "deploy fail", "the ser",
             "nginx con", "python err", "config", "redis OR postgres", "python NOT docker",
             "docker compose NOT nginx", "dock* OR kube*", '"docker compose"', '"the server"',
             '"deploy failed" python', '"docker compose" OR redis']
    db = SessionDB(corpora[schema], read_only=True)
    try:
        light = {}
        for text in typed:
            forget(db)
            light[text] = answer(search(db, text))
        for sort in ("newest",):
            for text in typed[:3]:
                forget(db)
                light[(text, sort)] = answer(search(db, text, sort=sort))
        without_light(monkeypatch)
        for key, got in light.items():
            forget(db)
            text, kw = (key, {}) if isinstance(key, str) else (key[0], {"sort": key[1]})
            assert got == answer(search(db, text, **kw)), key
        assert any(got[4] == "bm25-recent-window" for got in light.values())
    finally:
        db.close()


def marks_by_hit(result):
    return sorted((h.id, h.snippet, tuple(map(tuple, h.spans))) for h in result.hits)


@pytest.mark.parametrize("layout", ["v16", "v30"])
def test_text_only_fts5_can_mark_is_marked_by_fts5(tmp_path, upstream_copy, layout, monkeypatch):
    """Texts with accents, combining marks, the Kelvin sign, private use, fullwidth or
    Cyrillic letters next to the words: the page's marks are still FTS5's own, and the hits
    the same as the highlighted search's -- in a v16 store (the index keeps its own text:
    the message, its tool name and its calls) and a v30 store (the text through upstream's
    view: a tool result's first 8,192 characters)."""
    path = tmp_path / "state.db" if layout == "v16" else upstream_copy(30)
    db = SessionDB(path)
    try:
        add_many(db, "hostile", HOSTILE_TEXTS * 2)
        sid = "hostile"
        db.append_message(sid, "tool", "docker " + "x " * 5000 + "dockyard tail", tool_name="docker_exec")
        db.append_message(sid, "assistant", "calling it", tool_calls='[{"name": "dock", "args": "docker ps"}]')
        queries = ["dock", "docker", "docke", "nginx", "youer", "kubernetes", "compose", "docker comp",
                   "docker OR kubernetes", "docker NOT compose", "youer OR dock*", '"docker ps"',
                   '"docker compose"', '"docker x"']
        light = {}
        for text in queries:
            forget(db)
            light[text] = search(db, text, limit=100)
            assert light[text].error is None
        without_light(monkeypatch)
        for text in queries:
            forget(db)
            marked = search(db, text, limit=100)
            assert marks_by_hit(light[text]) == marks_by_hit(marked), text
            assert light[text].total_estimate == marked.total_estimate
        assert any(not light_mod.marks_exactly(h.snippet) for h in light["docker"].hits)
    finally:
        db.close()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(
        ["docker", "Dock", "compose", "kube", "redis", "d", "_", "-", " ", ".", "の", "服务", "🐳",
         "\u200d", "é", "\u0301", "\u212a", "docker_compose", "Redis2"]), max_size=10).map("".join),
        min_size=1, max_size=6),
    st.sampled_from(["docker OR compose", "dock* OR redis", "docker NOT compose", "docker compose NOT redis",
                     "kube* NOT dock*", "redis OR kube* OR compose", "docker AND compose",
                     '"docker compose"', '"docker compose" OR redis', '"dock compose" NOT kube',
                     '"redis2 docker"']),
)
def test_words_ored_or_negated_are_marked_as_fts5_marks_them(texts, query):
    """A query of single words (or quoted phrases) ORed, or one chain of them with NOTs: on
    every row FTS5 matches and ``marks_exactly`` vouches for, the marks are ``highlight()``'s."""
    import sqlite3

    from hermes_state.query import split_marked, parse_fts_query

    parsed = parse_fts_query(query)
    light = light_mod.Light(prefixes_mod.unicode61_phrases(parsed))
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(content)")
        conn.executemany("INSERT INTO t(rowid, content) VALUES (?, ?)", list(enumerate(texts, 1)))
        for rowid, marked in conn.execute(
            "SELECT rowid, highlight(t, 0, char(2), char(3)) FROM t WHERE t MATCH ?", (parsed.render(),)
        ):
            row = light.row(rowid, texts[rowid - 1], None)
            if row.marked:
                assert row.spans == split_marked(marked)[1], (texts[rowid - 1], query)
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("query", "light"),
    [("docker compose", True), ("redis OR postgres", True), ("python NOT docker", True),
     ("a b NOT c NOT d", True), ("dock* OR kube*", True), ("docker AND compose", True),
     ("a OR b c", False),  # an OR of chains: a branch that does not match is not marked
     ("a OR b NOT c", False), ('"docker compose"', True), ("docker -compose", True),
     ('"docker compose" redis', True), ('"a b a"', False), ('"docker compose" docker', False),
     ('"docker compose" dock*', False), ('"docker comp"*', False), ('"docker"*', True),
     ("café", False)],
)
def test_which_queries_are_marked_without_fts5(db, query, light):
    from hermes_state.query import parse_fts_query, sanitize_fts5_query

    assert narrowing_mod.lightable(db.capabilities, parse_fts_query(sanitize_fts5_query(query))) is light


def test_a_connection_keeps_a_bounded_number_of_texts(corpora, small_window, monkeypatch):
    """Past ``TEXTS_KEPT`` lower-cased texts a connection keeps only those of its last scan
    (what the next key narrows from), and every key still answers as a fresh search."""
    monkeypatch.setattr(TUNING, "TEXTS_KEPT", 30)
    typing = SessionDB(corpora[30], read_only=True)
    fresh = SessionDB(corpora[30], read_only=True)
    try:
        for text in ("docker", "kubernetes", "deploy fail"):
            for end in range(1, len(text) + 1):
                got = search(typing, text[:end])
                forget(fresh)
                assert answer(got) == answer(search(fresh, text[:end])), text[:end]
                # The bound, and at most what one key reads: its window, the rows a narrowing
                # reads past it, its page.
                kept = len(memo_mod.kept_for(typing.store).texts)
                assert kept <= 30 + TUNING.WINDOW + 1 + TUNING.NARROW_SLACK + 20
    finally:
        typing.close()
        fresh.close()


def test_a_search_asked_for_a_smaller_window_ranks_only_that_many_of_the_newest(db, small_window):
    """``window``: how many of the newest matches a keystroke's answer ranks when it cannot
    rank them all (several stores searched as one each rank their share). Its first page
    comes from the newest that many; every match is still on some page, once."""
    monkeypatch_window = 40  # (small_window's)
    # (the word in a quarter of the messages: ranked, not merely newest first)
    every = add_many(db, "s", [(f"kumquat note {i} " if i % 4 == 0 else f"plain note {i} ") + "filler " * (i % 7)
                               for i in range(800)])
    ids = every[::4]
    narrow = db.search("kumquat", limit=10, sort="auto", window=12)
    wide = db.search("kumquat", limit=10, sort="auto")
    assert narrow.ranking == wide.ranking == "bm25-recent-window"
    newest_12, newest_wide = set(sorted(ids)[-12:]), set(sorted(ids)[-(monkeypatch_window + 1):])
    assert {hit.id for hit in narrow.hits} <= newest_12
    assert {hit.id for hit in wide.hits} <= newest_wide and not {hit.id for hit in wide.hits} <= newest_12
    for limit in (5, 6, 12, 50):  # (6 and 12: a page that ends where the window does)
        seen, offset = [], 0
        while True:
            page = db.search("kumquat", limit=limit, offset=offset, sort="auto", window=12)
            seen += [hit.id for hit in page.hits]
            if not page.has_more:
                break
            offset += len(page.hits)
        assert sorted(seen) == sorted(ids), limit
