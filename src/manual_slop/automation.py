"""What automation may touch: the registries of fields, actions and selectors.

These registries are the single source of truth shared by the GUI, the Hook
API and the simulation harness. A field has a typed :class:`~manual_slop.schema.Field`
(so values are validated before they are queued), a getter and — unless it is
read-only — a setter. An action is a named handler, optionally taking
``user_data`` of a declared type. A selector is a list box or tab bar whose item
can be chosen by name. Getters, setters and handlers run on the main thread, with one
exception: a field whose getter is :func:`attr_getter` of a ``str``, ``int``, ``float`` or
``bool`` (:attr:`FieldSpec.lock_free`) may be read from any thread while no task is
outstanding, since reading one immutable attribute is atomic (see ``HookApi.gui_value``).

Exceptions::

    AutomationError              any rejected automation request
    ├── UnknownName              no field / action / selector by that name
    ├── InvalidValue             value or user_data of the wrong type or range
    ├── ReadOnlyField            set_value on a field that cannot be set
    └── FeatureUnavailable       action registered, but its feature is not built yet
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from manual_slop.schema import Field, FieldError

__all__ = [
    "ActionCall",
    "ActionRegistry",
    "ActionSpec",
    "AutomationError",
    "FeatureUnavailable",
    "FieldRegistry",
    "FieldSpec",
    "InvalidValue",
    "ParamSpec",
    "ReadOnlyField",
    "SelectorRegistry",
    "SelectorSpec",
    "UnknownName",
    "attr_getter",
    "attr_setter",
    "check_params",
    "params_doc",
]


class AutomationError(Exception):
    """An automation request that cannot be honoured; the message is shown to the caller."""


class UnknownName(AutomationError, LookupError):
    """No field, action or selector by that name."""


class InvalidValue(AutomationError, ValueError):
    """A value or user_data that does not fit its declared type."""


class ReadOnlyField(AutomationError):
    """The field can be read but not set."""


class FeatureUnavailable(AutomationError):
    """The action exists by name but its feature has not been built yet."""


ParamSpec = dict[str, tuple[Field, bool]]  # key -> (its field, required)


def check_params(action: str, spec: ParamSpec, data: Any) -> dict[str, Any]:
    """An action's table-shaped user_data checked key by key against ``spec``."""
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise InvalidValue(f"{action}: user_data must be a table with {', '.join(spec)}")
    unknown = sorted(set(data) - set(spec))
    if unknown:
        raise InvalidValue(f"{action}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(spec)}")
    out: dict[str, Any] = {}
    for key, (field, required) in spec.items():
        if key not in data:
            if required:
                raise InvalidValue(f"{action}: user_data needs {key!r} ({field.doc})")
            continue
        try:
            out[key] = field.check(f"{action}.{key}", data[key])
        except FieldError as exc:
            raise InvalidValue(str(exc)) from exc
    return out


def params_doc(spec: ParamSpec, what: str) -> str:
    """An action's doc with the keys its user_data takes (``key?`` when optional)."""
    keys = ", ".join(f"{k}{'' if required else '?'}" for k, (_, required) in spec.items())
    return f"{what} (user_data: {{{keys}}})"


def _unknown(kind: str, name: str, known: Iterable[str]) -> UnknownName:
    return UnknownName(f"unknown {kind} {name!r}; known: {', '.join(sorted(known))}")


def attr_setter(obj: Any, attr: str) -> Callable[[Any], None]:
    """A field setter that assigns ``obj.attr``; the value is already checked by the registry."""
    return lambda value: setattr(obj, attr, value)


@dataclass(frozen=True, slots=True)
class AttrGetter:
    """A getter that reads one attribute and nothing else (see :func:`attr_getter`)."""

    obj: Any
    attr: str

    def __call__(self) -> Any:
        return getattr(self.obj, self.attr)


def attr_getter(obj: Any, attr: str) -> AttrGetter:
    """A field getter that reads ``obj.attr``: declared as such, so a scalar field can be read
    without the main thread."""
    return AttrGetter(obj, attr)


_SCALARS = (str, int, float, bool)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str
    field: Field
    getter: Callable[[], Any]
    setter: Callable[[Any], None] | None
    doc: str

    @property
    def read_only(self) -> bool:
        return self.setter is None

    @property
    def lock_free(self) -> bool:
        """One attribute holding an immutable scalar: a read from another thread is atomic."""
        return isinstance(self.getter, AttrGetter) and self.field.kind in _SCALARS


class FieldRegistry:
    """Named, typed fields of the app state."""

    def __init__(self) -> None:
        self._fields: dict[str, FieldSpec] = {}

    def register(
        self,
        name: str,
        field: Field,
        getter: Callable[[], Any],
        setter: Callable[[Any], None] | None = None,
        doc: str = "",
    ) -> None:
        if name in self._fields:
            raise ValueError(f"field {name!r} registered twice")
        self._fields[name] = FieldSpec(name, field, getter, setter, doc or field.doc)

    def spec(self, name: str) -> FieldSpec:
        try:
            return self._fields[name]
        except KeyError:
            raise _unknown("field", name, self._fields) from None

    def names(self) -> list[str]:
        return sorted(self._fields)

    def settable_names(self) -> list[str]:
        return sorted(n for n, s in self._fields.items() if not s.read_only)

    def validate_set(self, name: str, value: Any) -> Any:
        """The checked value for ``set_value``; raises before anything is queued."""
        spec = self.spec(name)
        if spec.read_only:
            raise ReadOnlyField(f"field {name!r} is read-only")
        try:
            return spec.field.check(name, value)
        except FieldError as exc:
            raise InvalidValue(str(exc)) from exc

    def get(self, name: str) -> Any:
        """Current value (main thread)."""
        return self.spec(name).getter()

    def set(self, name: str, value: Any) -> None:
        """Validate and apply (main thread)."""
        checked = self.validate_set(name, value)
        setter = self.spec(name).setter
        assert setter is not None
        setter(checked)

    def snapshot(self) -> dict[str, Any]:
        """Every field's current value (main thread)."""
        return {name: spec.getter() for name, spec in sorted(self._fields.items())}


@dataclass(frozen=True, slots=True)
class ActionCall:
    """What an action handler receives: the user_data and who clicked (``gui`` or ``hook``)."""

    user_data: Any = None
    source: str = "gui"


@dataclass(frozen=True, slots=True)
class ActionSpec:
    name: str
    handler: Callable[[ActionCall], None]
    doc: str
    user_data: Field | None = None
    available: bool = True


class ActionRegistry:
    """Named buttons; ``user_data`` is checked against the action's declared field."""

    def __init__(self) -> None:
        self._actions: dict[str, ActionSpec] = {}

    def register(
        self,
        name: str,
        handler: Callable[[ActionCall], None],
        doc: str,
        user_data: Field | None = None,
    ) -> None:
        if name in self._actions:
            raise ValueError(f"action {name!r} registered twice")
        self._actions[name] = ActionSpec(name, handler, doc, user_data)

    def register_unavailable(self, name: str, doc: str, feature: str, user_data: Field | None = None) -> None:
        """Reserve an action name whose feature lands later; invoking it fails with FeatureUnavailable."""

        def unavailable(call: ActionCall) -> None:
            raise FeatureUnavailable(f"{name}: not available yet ({feature})")

        if name in self._actions:
            raise ValueError(f"action {name!r} registered twice")
        self._actions[name] = ActionSpec(name, unavailable, doc, user_data, available=False)

    def spec(self, name: str) -> ActionSpec:
        try:
            return self._actions[name]
        except KeyError:
            raise _unknown("action", name, self._actions) from None

    def names(self) -> list[str]:
        return sorted(self._actions)

    def validate(self, name: str, user_data: Any) -> Any:
        """Checked user_data for a click; raises before anything is queued."""
        spec = self.spec(name)
        if user_data is None:
            return None
        if spec.user_data is None:
            raise InvalidValue(f"action {name!r} takes no user_data")
        try:
            return spec.user_data.check(f"{name}.user_data", user_data)
        except FieldError as exc:
            raise InvalidValue(str(exc)) from exc

    def invoke(self, name: str, user_data: Any = None, source: str = "gui") -> None:
        """Validate and run (main thread)."""
        checked = self.validate(name, user_data)
        self.spec(name).handler(ActionCall(checked, source))


@dataclass(frozen=True, slots=True)
class SelectorSpec:
    name: str
    items: Callable[[], list[str]]
    select: Callable[[str], None]
    doc: str


class SelectorRegistry:
    """List boxes and tab bars whose item can be selected by name."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._selectors: dict[str, SelectorSpec] = {}

    def register(
        self, name: str, items: Callable[[], list[str]], select: Callable[[str], None], doc: str
    ) -> None:
        if name in self._selectors:
            raise ValueError(f"{self.kind} {name!r} registered twice")
        self._selectors[name] = SelectorSpec(name, items, select, doc)

    def spec(self, name: str) -> SelectorSpec:
        try:
            return self._selectors[name]
        except KeyError:
            raise _unknown(self.kind, name, self._selectors) from None

    def names(self) -> list[str]:
        return sorted(self._selectors)

    def select(self, name: str, item: str) -> None:
        """Choose ``item`` (main thread); InvalidValue when it is not one of the items."""
        spec = self.spec(name)
        items = spec.items()
        if item not in items:
            raise InvalidValue(f"{self.kind} {name!r} has no item {item!r}; items: {', '.join(items)}")
        spec.select(item)
