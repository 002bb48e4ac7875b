"""Shared fixtures: one real Triton server for the whole session, serving the bundled
face detector and the test-only models of tests/models/."""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.inference.redaction import forget_secrets
from app.resources import model_repository
from app.server.embedded import EmbeddedServer
from tests.mlserver.server import MLServer, running_mlserver

TESTS = Path(__file__).resolve().parent
SETTINGS_DIR_ENV = "TRITON_VIEWER_SETTINGS_DIR"  # app.ui.base.settings reads it (no Qt import here)


def _hear_what_a_background_start_ignores() -> None:
    """A run started in the background by a shell without job control (`cmd &`, `nohup`)
    inherits SIGINT (and under nohup SIGHUP) ignored, and so would every process the tests
    start: the app rightly keeps an ignored signal ignored, and the Ctrl-C and hang-up tests
    would see nothing. A handler of the suite's own is reset to the default in each child at
    exec, which an ignored signal is not; the suite itself gets Ctrl-C as Python does and
    still shrugs off a hang-up."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, lambda _signum, _frame: None)


_hear_what_a_background_start_ignores()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--headed",
        action="store_true",
        help="show the UI tests' windows on the current display (default: offscreen, no display needed)",
    )


def pytest_configure(config: pytest.Config) -> None:
    # Before any QApplication exists: widgets render offscreen unless --headed.
    if not config.getoption("--headed"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    elif os.environ.get("QT_QPA_PLATFORM") == "offscreen":
        del os.environ["QT_QPA_PLATFORM"]


# A run that cannot end (a thread nobody stops, an atexit hook waiting on one) must fail with
# every thread's stack, not hang CI until it is cut.
EXIT_GRACE_S = 120


def pytest_unconfigure(config: pytest.Config) -> None:
    faulthandler.dump_traceback_later(EXIT_GRACE_S, exit=True, file=sys.__stderr__)


TEST_MODELS = TESTS / "models"


@pytest.fixture(scope="session", autouse=True)
def settings_of_the_test_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The viewer's settings in a folder of this run, never the user's (~/.config): what another
    run or the user's own viewer saved there (a model, thresholds) must not change a test.
    UI tests get a folder of their own on top of this (tests/ui/viewer_fixtures.py)."""
    before = os.environ.get(SETTINGS_DIR_ENV)
    os.environ[SETTINGS_DIR_ENV] = str(tmp_path_factory.mktemp("settings"))
    yield
    if before is None:
        os.environ.pop(SETTINGS_DIR_ENV, None)
    else:
        os.environ[SETTINGS_DIR_ENV] = before


@pytest.fixture(autouse=True)
def no_secrets_from_earlier_tests() -> Iterator[None]:
    """Header values are masked process-wide once a connection used them (app.inference.
    redaction): one test's headers must not mask words in the next test's messages."""
    yield
    forget_secrets()


@pytest.fixture(scope="session")
def combined_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled repository plus the test models, as one repository of symlinks."""
    repo = tmp_path_factory.mktemp("model_repository")
    for source in (model_repository(), TEST_MODELS):
        for model in sorted(source.iterdir()):
            if (model / "config.pbtxt").is_file():
                (repo / model.name).symlink_to(model, target_is_directory=True)
    return repo


@pytest.fixture(scope="session")
def triton(combined_repository: Path) -> Iterator[EmbeddedServer]:
    # Some test models are meant not to load: the server must still come up.
    server = EmbeddedServer(combined_repository, require_all_ready=False, startup_timeout=180)
    with server:
        yield server


@pytest.fixture(scope="session")
def test_server(triton: EmbeddedServer) -> EmbeddedServer:
    """Alias used by the profile integration tests."""
    return triton


@pytest.fixture(scope="session")
def mlserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MLServer]:
    """MLServer (a KServe v2 server that is not Triton) on loopback, from its own venv
    (tests/mlserver/, `make mlserver`), serving boxes_nms and boxes_yolo."""
    with running_mlserver(tmp_path_factory.mktemp("mlserver")) as server:
        yield server


# The longest files, started first when the suite runs on several workers (`make test`: xdist,
# a file's tests on one worker): the package build alone takes ~2 min, and a long file started
# last would leave the other workers idle at the end. Measured per file (junit times), longest
# first; a file missing here only runs in its usual place.
START_FIRST = (
    "tests/packaging/test_frozen.py",
    "tests/integration/test_ultralytics_heads.py",  # ~3 min: seven exports, RT-DETR-l half of it
    "tests/integration/test_ultralytics_segment_classify.py",  # three segment heads, a classifier
    "tests/integration/test_cli_evaluate.py",
    "tests/bench/test_bench_smoke.py",
    "tests/ui/test_window_frames.py",  # ~60 s: every window in every dock combination, twice
    "tests/integration/test_model_files.py",
    "tests/integration/test_tune.py",
    "tests/ui/test_viewer_recovery.py",
    "tests/integration/test_embedded_server.py",
    "tests/integration/test_supervised_server.py",
    "tests/ui/test_server_tools.py",
    "tests/ui/test_viewer_window.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))

    def rank(item: pytest.Item) -> int:
        relative = Path(str(item.path)).relative_to(root).as_posix()
        return START_FIRST.index(relative) if relative in START_FIRST else len(START_FIRST)

    items.sort(key=rank)  # stable: the order inside each file and of the other files stays
