"""A line made to fit its width (:mod:`hermes_tui.fitting`): the first of its forms that fits,
and a line of parts that give way whole, in their order."""

from __future__ import annotations

from rich.text import Text

from hermes_tui.fitting import Part, cells, first_fitting, fit_parts

FORMS = ["Sessions · all · active · by start", "all · active · by start", "all · active"]


def test_the_longest_form_that_fits_is_chosen() -> None:
    assert first_fitting(FORMS, 80) == FORMS[0]
    assert first_fitting(FORMS, len(FORMS[0])) == FORMS[0], "a form as wide as the room fits"
    assert first_fitting(FORMS, len(FORMS[0]) - 1) == FORMS[1]
    assert first_fitting(FORMS, len(FORMS[2])) == FORMS[2]


def test_nothing_fits_gives_the_shortest_form() -> None:
    assert first_fitting(FORMS, 3) == FORMS[-1]


def test_no_width_yet_gives_the_longest_form() -> None:
    for not_laid_out in (None, 0, -6):
        assert first_fitting(FORMS, not_laid_out) == FORMS[0]


def test_wide_characters_count_as_two_cells() -> None:
    forms = ["数据库 docker", "数据库", "db"]
    assert cells(forms[0]) == 13
    assert first_fitting(forms, 13) == forms[0]
    assert first_fitting(forms, 12) == forms[1]
    assert first_fitting(forms, 5) == forms[2]


def test_rich_text_is_measured_by_its_cells_and_comes_back_with_its_styles() -> None:
    wide = Text.assemble(("2 messages match ", ""), ("“数据库”", "bold"), (" (n/N)", "dim"))
    short = Text.assemble(("2 match ", ""), ("“数据库”", "bold"))
    assert cells(wide) == wide.cell_len == 31
    assert first_fitting([wide, short], 31) is wide
    chosen = first_fitting([wide, short], 30)
    assert chosen is short and chosen.spans == short.spans


def test_forms_are_made_only_as_far_as_the_one_chosen() -> None:
    made: list[str] = []

    def forms():
        for form in FORMS:
            made.append(form)
            yield form

    assert first_fitting(forms(), 80) == FORMS[0]
    assert made == FORMS[:1]


PARTS = [Part("12 conversations", droppable=False), Part("all sources (internal runs hidden)", short="all sources"),
         Part("by start"), Part("~/.hermes/state.db", short="state.db", gives_way=1)]


def test_parts_that_fit_are_said_in_full() -> None:
    full = "12 conversations · all sources (internal runs hidden) · by start · ~/.hermes/state.db"
    assert fit_parts(PARTS, 200) == full
    assert fit_parts(PARTS, len(full)) == full


def test_parts_that_give_way_first_are_shortened_then_left_out_before_any_other() -> None:
    assert fit_parts(PARTS, 75) == "12 conversations · all sources (internal runs hidden) · by start · state.db"
    assert fit_parts(PARTS, 64) == "12 conversations · all sources (internal runs hidden) · by start"


def test_then_the_others_are_shortened_from_the_end_then_left_out_from_the_end() -> None:
    assert fit_parts(PARTS, 50) == "12 conversations · all sources · by start"
    assert fit_parts(PARTS, 40) == "12 conversations · all sources"
    assert fit_parts(PARTS, 20) == "12 conversations"


def test_a_part_that_may_not_be_left_out_stays_when_nothing_fits() -> None:
    assert fit_parts(PARTS, 5) == "12 conversations"
    assert fit_parts([Part("read-only snapshot", short="read-only", droppable=False)], 5) == "read-only"


def test_parts_in_three_orders_give_way_highest_first() -> None:
    parts = [Part("fts5", gives_way=2), Part("by relevance (bm25)", short="by relevance", droppable=False),
             Part("4 hits", droppable=False), Part("4.3 ms", gives_way=1)]
    assert fit_parts(parts, 44) == "fts5 · by relevance (bm25) · 4 hits · 4.3 ms"
    assert fit_parts(parts, 43) == "by relevance (bm25) · 4 hits · 4.3 ms"
    assert fit_parts(parts, 36) == "by relevance (bm25) · 4 hits"
    assert fit_parts(parts, 27) == "by relevance · 4 hits"


def test_parts_of_wide_characters_count_as_two_cells() -> None:
    parts = [Part("数据库 docker"), Part("3 hits", droppable=False)]
    assert fit_parts(parts, 22) == "数据库 docker · 3 hits"
    assert fit_parts(parts, 21) == "3 hits"
