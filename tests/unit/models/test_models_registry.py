"""Registry: import paths, @register_model, entry points, errors, lazy imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from pytest_modelprof.errors import ModelBuildError, ModelInputError, ModelNotFoundError
from pytest_modelprof.models import (
    DuplicateModelError,
    ModelSpec,
    Registry,
    list_models,
    register_model,
    resolve,
)

HELPER = textwrap.dedent(
    """
    import torch
    from torch import nn

    from pytest_modelprof.models import ModelSpec


    class TinyNet(nn.Module):
        def __init__(self, width: int = 8) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, width, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.conv(x)


    def make_tiny(width: int = 8) -> nn.Module:
        return TinyNet(width)


    def not_a_module() -> int:
        return 3


    SPEC = ModelSpec(
        name="tiny", source="import", builder=make_tiny, default_input_shape=(1, 3, 16, 16)
    )
    """
)


@pytest.fixture
def helper_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A throwaway importable package ``mp_helpers_<n>.nets`` (unique name: no cached import)."""
    pkg = f"mp_helpers_{tmp_path.name.replace('-', '_')}"
    (tmp_path / pkg).mkdir()
    (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / pkg / "nets.py").write_text(HELPER)
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{pkg}.nets"


def test_import_path_factory(helper_module: str) -> None:
    spec = resolve(f"{helper_module}:make_tiny")
    assert spec.source == "import"
    assert spec.default_input_shape is None
    with torch.device("meta"):
        module = spec.build(width=4)
    assert module.conv.out_channels == 4  # type: ignore[union-attr]
    with pytest.raises(ModelInputError, match="no default input shape"):
        spec.example_inputs()
    (x,), _ = spec.example_inputs((2, 3, 16, 16), device="meta")
    assert x.shape == (2, 3, 16, 16)


def test_import_path_module_class_and_spec(helper_module: str) -> None:
    with torch.device("meta"):
        assert type(resolve(f"{helper_module}:TinyNet").build()).__name__ == "TinyNet"
    spec = resolve(f"{helper_module}:SPEC")
    assert spec.name == f"{helper_module}:SPEC" and spec.default_input_shape == (1, 3, 16, 16)


def test_import_path_errors_name_the_culprit(helper_module: str) -> None:
    with pytest.raises(ModelNotFoundError, match=r"has no attribute 'make_tiyn'.*make_tiny"):
        resolve(f"{helper_module}:make_tiyn")
    with pytest.raises(ModelNotFoundError, match="cannot import module 'no_such_pkg_xyz.mod'"):
        resolve("no_such_pkg_xyz.mod:make")
    with pytest.raises(ModelBuildError, match="returned int, not a torch.nn.Module"):
        resolve(f"{helper_module}:not_a_module").build()


def test_register_model_decorator_and_duplicate() -> None:
    registry = Registry(entry_point_group=None)

    @registry.register_model("my_net", input_shape=(1, 3, 64, 64))
    def make_my_net(width: int = 8) -> nn.Module:
        return nn.Sequential(nn.Conv2d(3, width, 3), nn.ReLU())

    spec = registry.resolve("my_net")
    assert (spec.source, spec.group, spec.default_input_shape) == (
        "registered",
        "registered",
        (1, 3, 64, 64),
    )
    assert make_my_net(2)[0].out_channels == 2  # type: ignore[index]  # decorator returns it unchanged
    assert registry.list_models("MY_")["registered"] == ["my_net"]

    with pytest.raises(DuplicateModelError, match="'my_net' is already registered"):
        registry.register("my_net", make_my_net)
    with pytest.raises(DuplicateModelError, match="shadow the torchvision model"):
        registry.register("resnet50", make_my_net)
    registry.unregister("my_net")
    with pytest.raises(ModelNotFoundError):
        registry.resolve("my_net")


def test_default_registry_decorator() -> None:
    @register_model(
        "modelprof_test_default_net", input_shape=(1, 8), input_kind="token_ids", vocab_size=10
    )
    def make() -> nn.Module:
        return nn.Embedding(10, 4)

    try:
        spec = resolve("modelprof_test_default_net")
        assert "modelprof_test_default_net" in list_models()["registered"]
        (ids,), _ = spec.example_inputs(device="meta")
        assert ids.dtype == torch.long and ids.shape == (1, 8)
        (ids,), _ = spec.example_inputs()
        assert int(ids.max()) < 10
    finally:
        from pytest_modelprof.models import default_registry

        default_registry.unregister("modelprof_test_default_net")


def _write_dist(site: Path, dist: str, lines: str) -> None:
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[pytest_modelprof.models]\n{lines}\n")


def test_entry_point_group(
    helper_module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _write_dist(
        site,
        "mp_fake_plugin",
        f"ep_tiny = {helper_module}:make_tiny\nep_spec = {helper_module}:SPEC",
    )
    monkeypatch.syspath_prepend(str(site))
    registry = Registry()
    assert {"ep_tiny", "ep_spec"} <= set(registry.list_models()["registered"])
    spec = registry.resolve("ep_tiny")
    assert (spec.name, spec.source) == ("ep_tiny", "registered")
    with torch.device("meta"):
        assert type(spec.build()).__name__ == "TinyNet"
    assert registry.resolve("ep_spec").default_input_shape == (1, 3, 16, 16)

    with pytest.raises(DuplicateModelError, match="entry point"):
        registry.register("ep_tiny", lambda: nn.Identity())


def test_entry_point_clash_between_distributions(
    helper_module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _write_dist(site, "mp_plugin_a", f"clash = {helper_module}:make_tiny")
    _write_dist(site, "mp_plugin_b", f"clash = {helper_module}:TinyNet")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(DuplicateModelError, match="two entry points"):
        Registry().list_models()


def test_unknown_name_lists_close_matches() -> None:
    with pytest.raises(ModelNotFoundError) as info:
        resolve("resnet5O")
    message = str(info.value)
    assert "'resnet5O'" in message
    assert "did you mean 'resnet50'" in message
    assert "modelprof list --filter resnet" in message


def test_spec_rejects_bad_shapes() -> None:
    spec = ModelSpec(name="x", source="registered", builder=nn.Identity, default_input_shape=(1, 4))
    with pytest.raises(ModelInputError, match="positive ints"):
        spec.example_inputs((1, 0))
    with pytest.raises(ModelInputError, match="list of images"):
        ModelSpec(
            name="d", source="registered", builder=nn.Identity, input_kind="image_list"
        ).example_inputs((5, 5))


def test_importing_the_registry_is_lazy() -> None:
    code = (
        "import sys, pytest_modelprof.models as m; m.resolve; "
        "print(sorted({'torch', 'torchvision', 'ultralytics', 'timm', 'transformers'} "
        "& set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_ultralytics_gives_install_hint() -> None:
    # sys.modules[name] = None is how Python blocks an import: find_spec() returns None and
    # `import ultralytics` raises, exactly as if the extra were not installed.
    code = textwrap.dedent(
        """
        import sys
        sys.modules["ultralytics"] = None
        from pytest_modelprof.errors import ModelNotFoundError
        from pytest_modelprof.models import resolve
        from pytest_modelprof.models._ultralytics import ultralytics_available, ultralytics_names
        try:
            resolve("yolov8n.yaml")
        except ModelNotFoundError as exc:
            print(exc)
        print(ultralytics_available(), ultralytics_names())
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "ultralytics is not installed" in out.stdout
    assert 'pip install "pytest-modelprof[yolo]"' in out.stdout
    assert out.stdout.strip().endswith("False ()")
