"""track_to_mermaid: every ticket a node coloured by its status, every dependency an edge, titles
that would break Mermaid escaped (checked by a strict parser of the subset, which refuses what
the renderer must never write)."""

from __future__ import annotations

import time

import pytest

from manual_slop.mma.mermaid import STATUS_STYLES, TITLE_CHARS, mermaid_label, track_graph, track_to_mermaid
from manual_slop.mma.models import Ticket, TicketStatus, Track
from tests.unit.mma.mermaid_check import MermaidSyntaxError, parse_mermaid

NASTY = {
    "end": 'say "hi" [now] (ok) {x} |pipe| end',
    "graph": "end",
    "a.b": "subgraph inner\nend",
    "a:b": "<script>alert(1)</script> & #amp; `code` ; --> -.-> ==> :::killed",
    "x-1": "%%{init: {'securityLevel': 'loose'}}%% takes over",
    "o1": "naïve 中文 🎉 tab\there",
    "click": 'a"b\\"c',
    "style": "\x07bell\x1b[31m red",
    "classDef": "#35; already an entity code, and a lone # sign",
    "flowchart": "line one\r\nline two",
}


def nasty_track() -> Track:
    statuses = list(TicketStatus)
    tickets = []
    for index, (tid, description) in enumerate(NASTY.items()):
        depends = [tickets[index - 1].id] if index else []
        tickets.append(Ticket(tid, description, status=statuses[index % len(statuses)], depends_on=depends))
    return Track("tr-1", 'Track "one" %%{init}%% <b>', tickets=tickets)


def shown(text: str) -> str:
    """What a node shows of a description: its first line, one space between words, cut."""
    first = " ".join(next(line for line in text.splitlines() if line.strip()).split())
    return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 1].rstrip() + "…"


def test_every_status_has_a_class_and_every_ticket_its_status_class() -> None:
    track = nasty_track()
    chart = parse_mermaid(track_to_mermaid(track))
    assert set(chart.class_defs) == {str(s) for s in TicketStatus} == {str(s) for s in STATUS_STYLES}
    by_label = {label.split(": ", 1)[0]: node for node, label in chart.nodes.items()}
    for ticket in track.tickets:
        assert chart.classes[by_label[ticket.id]] == str(ticket.status), ticket.id


def test_nasty_titles_and_ids_survive_escaped_and_decode_to_their_first_line() -> None:
    track = nasty_track()
    text = track_to_mermaid(track)
    chart = parse_mermaid(text)  # raises on any character that could break the graph
    labels = list(chart.nodes.values())
    for ticket, label in zip(track.tickets, labels, strict=True):
        assert label == f"{ticket.id}: {shown(ticket.description)}", label
    assert any(label.endswith("…") for label in labels)  # a long title is cut, never an entity code
    assert all(node not in NASTY for node in chart.nodes)  # ids are generated: 'end' is no node id
    assert "%%{" not in text and "<script>" not in text and '"hi"' not in text
    assert chart.comments == ['track tr-1: Track "one" %%{init}%% <b> (planned)']


def test_edges_follow_dependencies_and_outside_dependencies_get_an_uncoloured_node() -> None:
    track = Track(
        "t", "diamond",
        tickets=[
            Ticket("a", "root"),
            Ticket("b", "left", depends_on=["a"]),
            Ticket("c", "right", depends_on=["a", "done.before"]),
            Ticket("d", "join", depends_on=["b", "c", "b"]),  # a repeat is one edge
        ],
    )  # fmt: skip
    chart = parse_mermaid(track_to_mermaid(track))
    name = {node: label.split(": ")[0] for node, label in chart.nodes.items()}
    edges = sorted((name[head], name[tail]) for head, tail in chart.edges)
    assert edges == [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("done.before", "c")]
    outside = next(node for node, label in chart.nodes.items() if label.startswith("done.before"))
    assert outside not in chart.classes and chart.nodes[outside] == "done.before: not in this track"
    graph = track_graph(track)
    assert [n["status"] for n in graph["nodes"]] == ["todo", "todo", "todo", "todo", None]
    assert {"from": "done.before", "to": "c"} in graph["edges"] and len(graph["edges"]) == 5


def test_an_empty_track_is_a_valid_graph_with_the_classes_and_no_nodes() -> None:
    chart = parse_mermaid(track_to_mermaid(Track("empty", "Nothing yet")))
    assert chart.nodes == {} and chart.edges == [] and len(chart.class_defs) == len(TicketStatus)


def test_a_200_ticket_track_renders_every_node_and_edge_quickly() -> None:
    statuses = list(TicketStatus)
    tickets = [
        Ticket(f"k{i}", f"ticket number {i} " + "x" * 80, status=statuses[i % 5],
               depends_on=[f"k{j}" for j in sorted({i - 1, i // 2}) if 0 <= j < i])
        for i in range(200)
    ]  # fmt: skip
    track = Track("big", "Big", tickets=tickets)
    started = time.perf_counter()
    text = track_to_mermaid(track)
    elapsed = time.perf_counter() - started
    chart = parse_mermaid(text)
    assert len(chart.nodes) == 200
    assert len(chart.edges) == sum(len(t.depends_on) for t in tickets)
    assert all(len(label) <= len("k199: ") + TITLE_CHARS for label in chart.nodes.values())
    assert all(label.endswith("…") for label in chart.nodes.values())
    assert elapsed < 1.0  # ~5 ms here; a quadratic renderer would show


def test_the_redactor_runs_over_titles_before_escaping() -> None:
    track = Track("t", "key sk-SECRET in the title", tickets=[Ticket("a", 'use "sk-SECRET" now')])
    text = track_to_mermaid(track, lambda s: s.replace("sk-SECRET", "[REDACTED:key]"))
    assert "sk-SECRET" not in text
    chart = parse_mermaid(text)
    assert list(chart.nodes.values()) == ['a: use "[REDACTED:key]" now']


@pytest.mark.parametrize(
    "broken",
    [
        'flowchart LR\n    t1["say "hi""]\n',  # a raw quote ends the string
        "flowchart LR\n    end[\"x\"]\n",  # a keyword as node id
        'flowchart LR\n    t1["a [b]"]\n',  # brackets
        'flowchart LR\n    t1["a # b"]\n',  # a '#' that starts no entity
        'flowchart LR\n    t1["x"]:::nope\n',  # a class without classDef
        'flowchart LR\n    t1["x"]\n    t1 --> t2\n',  # an edge to nowhere
        'flowchart LR\n    %%{init: {}}%%\n',  # a directive
        'graph TD\n    t1["x"]\n',  # another header
    ],
)
def test_the_checker_refuses_what_would_break_a_graph(broken: str) -> None:
    with pytest.raises(MermaidSyntaxError):
        parse_mermaid(broken)


def test_labels_are_one_line_with_only_safe_characters() -> None:
    assert mermaid_label('a "b"\n c') == "a #34;b#34; c"
    assert mermaid_label("x%%{y}%%") == "x#37;#37;#123;y#125;#37;#37;"
