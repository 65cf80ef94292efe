"""The fake Hub itself, driven by huggingface_hub's real client (offline, 127.0.0.1)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.fakehub import FakeHub

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    import huggingface_hub.constants as C

    h = FakeHub(job_timeout_s=20).start()
    h.extra_env["PATH"] = f"{Path(sys.executable).parent}:/usr/bin:/bin"
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_TOKEN", "hf_dummy")
    monkeypatch.setattr(C, "HF_HUB_OFFLINE", False)
    try:
        yield h
    finally:
        h.stop()


def test_listens_on_loopback_with_an_os_port(hub: FakeHub) -> None:
    assert hub.url.startswith("http://127.0.0.1:") and not hub.url.endswith(":0")


def test_repo_commit_download_tree(hub: FakeHub, tmp_path: Path) -> None:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi, hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, RevisionNotFoundError

    api = HfApi(endpoint=hub.url, token="hf_dummy")
    assert api.whoami()["name"] == "tester"
    api.create_repo("tester/r", repo_type="dataset", exist_ok=True)
    api.create_repo("tester/r", repo_type="dataset", exist_ok=True)  # 409 tolerated
    with pytest.raises(HfHubHTTPError):
        api.create_repo("tester/r", repo_type="dataset")  # 409 surfaces without exist_ok
    one = api.create_commit(
        "tester/r",
        [
            CommitOperationAdd("a/x.txt", b"one\n"),
            CommitOperationAdd("a/b/y.bin", bytes(range(256))),
        ],
        commit_message="first",
        repo_type="dataset",
    ).oid
    two = api.create_commit(
        "tester/r",
        [CommitOperationDelete("a/x.txt"), CommitOperationAdd("z.txt", b"two\n")],
        commit_message="second",
        repo_type="dataset",
    ).oid
    assert api.dataset_info("tester/r").sha == two
    # the old revision still serves the deleted file; main does not
    old = hf_hub_download(
        "tester/r",
        "a/x.txt",
        repo_type="dataset",
        revision=one,
        endpoint=hub.url,
        local_dir=str(tmp_path / "dl1"),
    )
    assert Path(old).read_bytes() == b"one\n"
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(
            "tester/r",
            "a/x.txt",
            repo_type="dataset",
            endpoint=hub.url,
            local_dir=str(tmp_path / "dl2"),
        )
    got = hf_hub_download(
        "tester/r",
        "a/b/y.bin",
        repo_type="dataset",
        endpoint=hub.url,
        local_dir=str(tmp_path / "dl3"),
    )
    assert Path(got).read_bytes() == bytes(range(256))
    with pytest.raises(RevisionNotFoundError):
        api.dataset_info("tester/r", revision="f" * 40)
    tree = {f.path for f in api.list_repo_tree("tester/r", recursive=True, repo_type="dataset")}
    assert tree == {".gitattributes", "a", "a/b", "a/b/y.bin", "z.txt"}
    flat = {f.path for f in api.list_repo_tree("tester/r", path_in_repo="a", repo_type="dataset")}
    assert flat == {"a/b"}


def test_unauthenticated_requests_refused(hub: FakeHub) -> None:
    import httpx

    r = httpx.get(f"{hub.url}/api/whoami-v2", timeout=5)
    assert r.status_code == 401
    r = httpx.post(f"{hub.url}/api/jobs/tester", json={}, timeout=5)
    assert r.status_code == 401


def test_job_lifecycle_logs_labels_cancel_duplicate(hub: FakeHub) -> None:
    from huggingface_hub import HfApi

    api = HfApi(endpoint=hub.url, token="hf_dummy")
    hub.policy = lambda spec: "stuck" if spec["labels"].get("kind") == "stuck" else "run"
    ok = api.run_job(
        image="python:3.11",
        command=[
            "bash",
            "-c",
            'echo "secret is $MY_SECRET"; for i in 1 2 3 4; do echo line$i; done',
        ],
        secrets={"MY_SECRET": "s3"},
        labels={"kind": "ok"},
        namespace="tester",
    )
    bad = api.run_job(
        image="python:3.11",
        command=["bash", "-c", "echo failing >&2; exit 7"],
        labels={"kind": "bad"},
        namespace="tester",
    )
    stuck = api.run_job(
        image="python:3.11", command=["true"], labels={"kind": "stuck"}, namespace="tester"
    )
    assert hub.wait_jobs(20)
    assert api.inspect_job(job_id=ok.id, namespace="tester").status.stage == "COMPLETED"
    b = api.inspect_job(job_id=bad.id, namespace="tester")
    assert (b.status.stage, b.status.message) == ("ERROR", "exit code 7")
    s = api.inspect_job(job_id=stuck.id, namespace="tester")
    assert s.status.stage == "SCHEDULING" and s.durations.scheduling_secs >= 7000
    assert "s3" not in str(s.secrets) and "s3" not in str(
        api.inspect_job(job_id=ok.id, namespace="tester")
    )
    logs = list(api.fetch_job_logs(job_id=ok.id, namespace="tester"))
    assert logs == ["secret is s3", "line1", "line2", "line3", "line4"]
    assert list(api.fetch_job_logs(job_id=ok.id, namespace="tester", tail=2)) == ["line3", "line4"]
    assert list(api.fetch_job_logs(job_id=bad.id, namespace="tester")) == ["failing"]
    listed = [j.id for j in api.list_jobs(labels={"kind": "bad"}, namespace="tester")]
    assert listed == [bad.id]
    assert {j.id for j in api.list_jobs(status="SCHEDULING", namespace="tester")} == {stuck.id}
    api.cancel_job(job_id=stuck.id, namespace="tester")
    assert api.inspect_job(job_id=stuck.id, namespace="tester").status.stage == "CANCELED"
    again = api.rerun_job(job_id=bad.id, namespace="tester")
    assert again.id != bad.id and again.labels == bad.labels
    assert hub.wait_jobs(20)
    assert api.inspect_job(job_id=again.id, namespace="tester").status.stage == "ERROR"


def test_job_time_limit_kills_it(hub: FakeHub) -> None:
    from huggingface_hub import HfApi

    hub.job_timeout_s = 1.0
    api = HfApi(endpoint=hub.url, token="hf_dummy")
    j = api.run_job(image="python:3.11", command=["sleep", "30"], namespace="tester")
    assert hub.wait_jobs(10)
    info = api.inspect_job(job_id=j.id, namespace="tester")
    assert info.status.stage == "ERROR"
    assert any(
        "killed after" in line for line in api.fetch_job_logs(job_id=j.id, namespace="tester")
    )
