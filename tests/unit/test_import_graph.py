"""The package's static import graph has no cycle.

Every import statement counts: those under ``if TYPE_CHECKING:`` and inside functions too,
because each one is a dependency a reader has to follow and a cycle waiting for the day it
runs. ``from pkg import name`` depends on ``pkg`` (its ``__init__``) and, when ``name`` is a
module, on ``pkg.name``; ``import a.b.c`` depends on ``a.b.c``.

The services the controller imports are typed against small protocols instead of the
controller; the last tests check that the controller still offers every member they list.
"""

from __future__ import annotations

import ast
import itertools
from collections import deque
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Generic, Protocol

from manual_slop.ai.providers.base import Provider
from manual_slop.ai.windows import SizedModel
from manual_slop.bindings import BindingHost
from manual_slop.context.discussion_service import DiscussionHost, UndoableEdits
from manual_slop.context.jobs import JobHost
from manual_slop.context.service import ContextHost, ContextService
from manual_slop.request_flow import RequestHost
from manual_slop.tools.approval import Approver, ToolHost

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "manual_slop"

Graph = dict[str, dict[str, int]]  # module -> {imported module: line of the first import}


def module_files(src: Path = SRC, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package`` (a package is its ``__init__``)."""
    files: dict[str, Path] = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        files[".".join(parts)] = path
    return files


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    """The dotted names one import statement of ``module`` may load."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    if node.level:  # relative: resolved against the importing module's package
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join([*base, *([node.module] if node.module else [])])
    else:
        source = node.module or ""
    yield source
    yield from (f"{source}.{alias.name}" for alias in node.names)


def import_graph(src: Path = SRC, package: str = PACKAGE) -> Graph:
    """Which modules of ``package`` each of its modules imports (edges to itself left out)."""
    files = module_files(src, package)
    graph: Graph = {name: {} for name in files}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _imported(node, module, is_package):
                if target in files and target != module:
                    graph[module].setdefault(target, node.lineno)
    return graph


def strongly_connected(graph: Mapping[str, Mapping[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def shortest_cycle(graph: Mapping[str, Mapping[str, int]], start: str) -> list[str]:
    """A shortest path from ``start`` back to itself (``[]`` when there is none)."""
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph[node]):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    return []


def describe(graph: Graph, cycle: list[str]) -> str:
    steps = [f"  {a} -> {b} (line {graph[a][b]})" for a, b in itertools.pairwise(cycle)]
    return "\n".join(steps)


def test_the_package_import_graph_has_no_cycle() -> None:
    graph = import_graph()
    components = strongly_connected(graph)
    report = [
        f"{len(c)} modules import each other: {', '.join(c)}\n{describe(graph, shortest_cycle(graph, c[0]))}"
        for c in components
    ]
    assert not components, "import cycles:\n" + "\n".join(report)


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    assert len(graph) > 100
    # a plain from-import, an import under TYPE_CHECKING, one inside a function
    assert "manual_slop.request_flow" in graph["manual_slop.controller"]
    assert "manual_slop.ai.windows" in graph["manual_slop.context.fit"]
    assert "manual_slop.tools.approval" in graph["manual_slop.request_flow"]
    # a package's face imports its modules
    assert "manual_slop.context.aggregate" in graph["manual_slop.context"]


def test_from_package_import_counts_the_package_and_the_module(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg.a import A\n")
    (pkg / "a.py").write_text("A = 1\ndef f():\n    from pkg.sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .. import a\n"
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph == {
        "pkg": {"pkg.a": 1},
        "pkg.a": {"pkg.sub": 3, "pkg.sub.b": 3},
        "pkg.sub": {},
        "pkg.sub.b": {"pkg": 4, "pkg.a": 4},
    }
    assert strongly_connected(graph) == [["pkg", "pkg.a", "pkg.sub.b"]]
    assert shortest_cycle(graph, "pkg.a") == ["pkg.a", "pkg.sub.b", "pkg.a"]


def protocol_members(protocol: type) -> set[str]:
    """The attributes and methods a protocol (with its bases) lists."""
    members: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (Protocol, Generic, object):
            continue
        members |= set(vars(cls).get("__annotations__", {}))
        members |= {name for name in vars(cls) if not name.startswith("_")}
    return members


def test_the_controller_offers_what_its_services_are_typed_against(make_controller) -> None:
    ctrl = make_controller()
    hosts = (BindingHost, RequestHost, ContextHost, DiscussionHost, JobHost, ToolHost, Approver)
    assert "context" in protocol_members(RequestHost) and "request_approval" in protocol_members(RequestHost)
    for host in hosts:
        missing = sorted(name for name in protocol_members(host) if not hasattr(ctrl, name))
        assert not missing, f"{host.__name__} lists what AppController does not have: {', '.join(missing)}"


def test_providers_and_the_context_service_offer_what_is_typed_against_them() -> None:
    for protocol, cls in ((SizedModel, Provider), (UndoableEdits, ContextService)):
        missing = sorted(name for name in protocol_members(protocol) if not hasattr(cls, name))
        assert not missing, f"{protocol.__name__} lists what {cls.__name__} does not have: {missing}"
