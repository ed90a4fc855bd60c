"""``--data hf:OWNER/NAME[@REVISION]``: a data set fetched from the Hugging Face Hub by the real
huggingface_hub client, from a real local HTTP server answering the Hub's endpoints
(tests/hub_server.py) named by ``HF_ENDPOINT``, into a Hub cache in the test's folder."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from regionfocus import ModelReply, Point
from regionfocus.actions import click
from regionfocus.kit import hub
from regionfocus.screenspot_pro.cli import main as screenspot_main
from tests.hub_server import HubRepo, HubServer
from tests.scripted import ScriptedModel

REPO = "likaixin/ScreenSpot-Pro"
BOX = (40, 30, 120, 60)


def screenspot_files(instruction: str = "open the file menu") -> dict[str, bytes]:
    """A one-sample ScreenSpot-Pro set as the Hub repo holds it (annotations/, images/)."""
    buf = io.BytesIO()
    Image.new("RGB", (320, 200), (240, 240, 240)).save(buf, format="PNG")
    record = {
        "id": "vscode_macos_0", "img_filename": "vscode_macos/screen.png", "bbox": list(BOX),
        "img_size": [320, 200], "instruction": instruction, "instruction_cn": "打开文件菜单", "application": "vscode",
        "platform": "macos", "group": "Dev", "ui_type": "text",
    }  # fmt: skip
    return {
        ".gitattributes": b"*.png filter=lfs diff=lfs merge=lfs -text\n",
        "README.md": b"# ScreenSpot-Pro (test copy)\n",
        "annotations/vscode_macos.json": json.dumps([record]).encode(),
        "images/vscode_macos/screen.png": buf.getvalue(),
    }


@pytest.fixture(autouse=True)
def online(monkeypatch):
    """conftest.py puts huggingface_hub offline for every test (no network at test time); these
    tests talk to a server on localhost only. The client reads the setting once, at import."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_TOKEN", raising=False)


@pytest.fixture()
def hub_env(tmp_path, monkeypatch):
    """A Hub holding the set (tag v1 and main at one commit), its cache under tmp_path."""
    repo = HubRepo()
    first = repo.add_commit(screenspot_files(), ref="v1")
    repo.refs["main"] = first
    with HubServer({REPO: repo}, page_size=2) as server:  # several tree pages, as the Hub pages
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
        yield server, repo, first


def model_clicking_the_target() -> ScriptedModel:
    centre = Point((BOX[0] + BOX[2]) / 2, (BOX[1] + BOX[3]) / 2)
    return ScriptedModel(on_act=lambda *a, **k: ModelReply("click", action=click(centre.x, centre.y)))


def run(out: Path, data: str, capsys) -> tuple[int, str]:
    argv = ["--data", data, "--out", str(out), "--agent", "ocr", "--no-progress", "--no-regionfocus"]
    code = screenspot_main(argv, model=model_clicking_the_target())
    return code, capsys.readouterr().err


def test_parse_spec_reads_owner_name_and_revision_and_names_what_is_wrong():
    assert hub.parse_spec("hf:likaixin/ScreenSpot-Pro") == hub.HubSpec("likaixin/ScreenSpot-Pro")
    assert hub.parse_spec("hf:a/b@v1.0").revision == "v1.0"
    for bad, why in (
        ("hf:", "OWNER/NAME"),
        ("hf:noslash", "OWNER/NAME"),
        ("hf:a/b/c", "OWNER/NAME"),
        ("hf:a/b@", "revision"),
    ):
        with pytest.raises(ValueError, match=why):
            hub.parse_spec(bad)


def test_a_hub_set_is_downloaded_into_the_hub_cache_and_the_run_pins_its_commit(hub_env, tmp_path, capsys):
    server, repo, first = hub_env
    code, err = run(tmp_path / "run", f"hf:{REPO}", capsys)
    assert code == 0, err
    snapshot = tmp_path / "hub-cache" / "datasets--likaixin--ScreenSpot-Pro" / "snapshots" / first
    assert (snapshot / "images/vscode_macos/screen.png").read_bytes() == repo.commits[first][
        "images/vscode_macos/screen.png"
    ]
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["identity"]["data"] == f"hf:{REPO}@{first}"  # the commit, not the cache path
    records = [json.loads(ln) for ln in (tmp_path / "run" / "records.jsonl").read_text().splitlines() if ln]
    assert [r["id"] for r in records if "id" in r] == ["vscode_macos_0"]
    assert ("GET", f"/api/datasets/{REPO}/revision/main") in server.requests  # main resolved to a commit
    # 3 folders and 4 files, 2 a page: the client follows the Link header to the end
    assert len([r for r in server.requests if "/tree/" in r[1]]) == 4


def test_a_rerun_reads_the_pinned_commit_from_the_cache_after_main_moved(hub_env, tmp_path, capsys):
    server, repo, first = hub_env
    assert run(tmp_path / "run", f"hf:{REPO}", capsys)[0] == 0
    repo.add_commit(screenspot_files("open the edit menu"), ref="main")  # the Hub moves on
    server.requests.clear()
    code, err = run(tmp_path / "run", f"hf:{REPO}", capsys)
    assert code == 0, err
    assert server.requests == []  # the pinned commit, whole in the cache: not one request
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["identity"]["data"] == f"hf:{REPO}@{first}"


def test_a_rerun_into_the_default_folder_reads_its_pinned_commit_too(hub_env, tmp_path, monkeypatch, capsys):
    server, repo, first = hub_env
    monkeypatch.chdir(tmp_path)  # no --out: runs/screenspot-pro-ocr, known only once the data is
    argv = ["--data", f"hf:{REPO}", "--agent", "ocr", "--no-progress", "--no-regionfocus"]
    assert screenspot_main(argv, model=model_clicking_the_target()) == 0
    repo.add_commit(screenspot_files("open the edit menu"), ref="main")
    server.requests.clear()
    assert screenspot_main(argv, model=model_clicking_the_target()) == 0, capsys.readouterr().err
    assert server.requests == []
    (config,) = (tmp_path / "runs").glob("*/config.json")
    assert json.loads(config.read_text())["identity"]["data"] == f"hf:{REPO}@{first}"


def test_a_second_run_elsewhere_downloads_no_file_again(hub_env, tmp_path, capsys):
    server, _, first = hub_env
    assert run(tmp_path / "a", f"hf:{REPO}@v1", capsys)[0] == 0
    server.requests.clear()
    code, err = run(tmp_path / "b", f"hf:{REPO}@v1", capsys)
    assert code == 0, err
    assert server.file_requests() == []  # the tag is resolved again; every file comes from the cache
    assert (
        json.loads((tmp_path / "b" / "config.json").read_text())["identity"]["data"] == f"hf:{REPO}@{first}"
    )


def test_a_missing_set_exits_2_naming_it(hub_env, tmp_path, capsys):
    code, err = run(tmp_path / "run", "hf:nobody/no-such-set", capsys)
    lines = [ln for ln in err.splitlines() if "error" in ln]
    assert code == 2 and len(lines) == 1
    assert "hf:nobody/no-such-set" in lines[0] and "no data set 'nobody/no-such-set'" in lines[0]
    assert not (tmp_path / "run" / "config.json").exists()


@pytest.mark.parametrize("revision", ["v9", "0" * 40])
def test_a_revision_the_set_lacks_exits_2_naming_it(hub_env, tmp_path, capsys, revision):
    code, err = run(tmp_path / "run", f"hf:{REPO}@{revision}", capsys)
    lines = [ln for ln in err.splitlines() if "error" in ln]
    assert code == 2 and len(lines) == 1
    assert f"no revision '{revision}'" in lines[0]


def test_an_unreachable_hub_with_nothing_cached_exits_2(tmp_path, monkeypatch, capsys):
    with HubServer() as server:
        dead = server.endpoint  # a port nothing listens on once the server is gone
    monkeypatch.setenv("HF_ENDPOINT", dead)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    code, err = run(tmp_path / "run", f"hf:{REPO}", capsys)
    assert code == 2 and "could not reach the Hub" in err and f"hf:{REPO}" in err


def test_without_huggingface_hub_installed_the_run_exits_2_naming_the_pip_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "huggingface_hub", None)  # as if not installed
    code, err = run(tmp_path / "run", f"hf:{REPO}", capsys)
    assert code == 2 and "pip install huggingface_hub" in err
