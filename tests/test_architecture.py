"""The package's imports run one way along the pipeline (docs/design.md, "Packages").

Every import of every module of the package (at the top or inside a function) is read from its
syntax tree and mapped to the stage it lands in; a stage may import only stages below it in LAYERS.
That also rules out cycles between stages.
"""
import ast
import pathlib

import cdnajit

ROOT = pathlib.Path(cdnajit.__file__).parent

# Bottom to top: each stage may import the ones listed before it. errors, environment and version
# are leaf modules everything may read; the root package (__init__, __main__) may import anything.
LAYERS = [
    {"errors", "environment", "version"},
    {"ir"},
    {"passes"},
    {"lowering"},
    {"libs"},
    {"codegen"},
    {"runtime"},
    {"frontend"},
    {"<root>"},
]
LAYER_OF = {stage: level for level, stages in enumerate(LAYERS) for stage in stages}
NOT_PACKAGE = {"tests", "benchmarks", "examples", "build", ".venv", "docs"}


def package_modules():
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if parts[0] in NOT_PACKAGE or parts[0].startswith(".") or parts == ("setup.py",):
            continue
        yield path, parts


def stage_of(module: list[str]) -> str:
    """The stage of a module named by its dotted parts under the package (["runtime", "cache"])."""
    if not module or not (ROOT / module[0]).is_dir():
        return module[0] if module and module[0] in LAYER_OF else "<root>"
    return module[0]


def is_module(parts: list[str]) -> bool:
    path = ROOT.joinpath(*parts)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported_modules(path: pathlib.Path, parts: tuple[str, ...]):
    """(line, module parts under the package) of every import of the package's own modules."""
    package = list(parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "cdnajit":
                    yield node.lineno, alias.name.split(".")[1:]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                module = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "cdnajit":
                module = node.module.split(".")[1:]
            else:
                continue
            for alias in node.names:  # `from .. import libs` imports the module cdnajit.libs
                yield node.lineno, module + [alias.name] if is_module(module + [alias.name]) else module


def test_every_module_is_in_a_stage():
    stages = {stage_of([*parts[:-1], parts[-1].removesuffix(".py")]) for _, parts in package_modules()}
    assert stages <= set(LAYER_OF), stages - set(LAYER_OF)


def test_imports_run_one_way():
    wrong = []
    for path, parts in package_modules():
        source = stage_of([*parts[:-1], parts[-1].removesuffix(".py")])
        for line, module in imported_modules(path, parts):
            target = stage_of(module)
            if target != source and LAYER_OF[target] > LAYER_OF[source]:
                wrong.append(f"{'/'.join(parts)}:{line} ({source}) imports {'.'.join(module) or 'cdnajit'} ({target})")
    assert not wrong, "imports against the pipeline's direction:\n" + "\n".join(wrong)


def test_the_walk_sees_imports():
    # The walk itself: the executable imports passes, lowering, codegen and the libraries.
    path = ROOT / "runtime" / "executable.py"
    targets = {module[0] for _, module in imported_modules(path, ("runtime", "executable.py")) if module}
    assert {"passes", "lowering", "codegen", "libs", "ir"} <= targets, targets


def test_no_stage_names_a_library():
    # The pipeline, the executable and the reports reach libraries through ir/ops/library.py's registry.
    for relative in ["passes/match_libraries.py", "passes/manager.py", "runtime/executable.py", "runtime/report.py",
                     "lowering/emit_library.py"]:
        for line, module in imported_modules(ROOT / relative, tuple(relative.split("/"))):
            assert module[:1] != ["libs"] or module == ["libs"], f"{relative}:{line} imports {'.'.join(module)}"
