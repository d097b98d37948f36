"""The ``modelprof`` fixture object and the profiles one test registered."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_modelprof.baseline.store import sanitize_component
from pytest_modelprof.errors import ModelprofError, SettingsError
from pytest_modelprof.gate.request import ProfileRequest, parse_capture_options
from pytest_modelprof.gate.shapes import parse_input_shape

if TYPE_CHECKING:
    from pytest_modelprof.schema import ModelProfile

__all__ = ["TestProfiles", "Modelprof"]


def _one_file(a: str | None, b: str | None) -> bool:
    """Whether two ``name=``s of one test give one baseline file where case is ignored."""
    if a is None or b is None:
        return False
    return sanitize_component(a).lower() == sanitize_component(b).lower()


class TestProfiles:
    """The profiles one test registered, in order, told apart by ``name``."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(self) -> None:
        self.entries: list[tuple[str | None, ProfileRequest, ModelProfile]] = []
        # The request being profiled or judged right now: names the model of an error row.
        self.current: ProfileRequest | None = None

    def check_free(self, name: str | None) -> None:
        """Raise :class:`SettingsError` if a profile under ``name`` is already registered."""
        if any(other == name for other, _, _ in self.entries):
            what = "without name=" if name is None else f"with name={name!r}"
            raise SettingsError(
                f"this test already profiled a model {what}; give each profile of a test "
                f"its own name=, e.g. modelprof(model, name='backbone')"
            )
        clash = next((o for o, _, _ in self.entries if _one_file(o, name)), None)
        if clash is not None:
            raise SettingsError(
                f"name={name!r} and name={clash!r} differ only by case: their baselines would be "
                "one file on macOS and Windows; give each profile a name that differs in more"
            )

    def add(self, name: str | None, request: ProfileRequest, profile: ModelProfile) -> None:
        """Register one profile; a second one under the same ``name`` is an error."""
        self.check_free(name)
        self.entries.append((name, request, profile))


class Modelprof:
    """The ``modelprof`` fixture: ``modelprof(module_or_name, input_shape=..., name=...)``;
    annotate with it as ``def test_x(modelprof: pytest_modelprof.Modelprof)``.

    Profiles the model (reusing a profile taken earlier in the session for the same model and
    inputs), registers it for this test's gate and returns the :class:`ModelProfile`.
    """

    def __init__(
        self,
        profiles: TestProfiles | None,
        profile: Callable[[ProfileRequest], ModelProfile],
        defaults: Callable[[], tuple[Any, str | None, dict[str, Any]]],
        fail: Callable[[str], Any] | None = None,
    ) -> None:
        self._profiles = profiles
        self._profile = profile
        self._defaults = defaults
        # How a failure reaches the user: the plugin passes a short pytest.fail, so a model's
        # own error reads as one message instead of a traceback through our internals.
        self._fail = fail

    def __call__(
        self,
        module_or_name: Any,
        input_shape: Any = None,
        inputs: Any = None,
        name: str | None = None,
        *,
        device: str | None = None,
        dtype: Any = None,
        mode: str | None = None,
        include_backward: bool | None = None,
        fail_on_uncounted: bool | None = None,
    ) -> ModelProfile:
        """Profile ``module_or_name``, register it for the gate and return the profile.

        ``dtype``, ``mode`` and ``include_backward`` default to the marker's; they and
        ``fail_on_uncounted`` go to ``profile_model``.
        """
        __tracebackhide__ = True
        if name is not None and (not isinstance(name, str) or not name):
            raise SettingsError(f"modelprof(): name={name!r} must be a non-empty string")
        default_shape, default_device, capture = self._defaults()
        if input_shape is None and inputs is None:
            input_shape = default_shape
        shape = parse_input_shape(input_shape, "modelprof()")
        given = {"dtype": dtype, "mode": mode, "include_backward": include_backward,
                 "fail_on_uncounted": fail_on_uncounted}
        options = {**capture, **parse_capture_options(
            {k: v for k, v in given.items() if v is not None}, "modelprof()"
        )}
        request = ProfileRequest(
            module_or_name, shape, inputs, device if device is not None else default_device,
            name, **options,
        )
        if self._profiles is not None:
            self._profiles.check_free(name)
            self._profiles.current = request
        fail = self._fail
        problem: ModelprofError | None = None
        try:
            result = self._profile(request)
        except ModelprofError as exc:
            if fail is None:
                raise
            problem = exc
        if fail is not None and problem is not None:
            fail(f"modelprof: {problem}")  # outside the handler: one message, no chained trace
            raise problem  # only if ``fail`` returned
        if self._profiles is not None:
            self._profiles.add(name, request, result)
            self._profiles.current = None
        return result


