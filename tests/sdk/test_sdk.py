"""The interface's official Python client (`interhumanai`) against a live `attune serve`.

Every test goes through the client's public API and asserts on its typed objects (pydantic
models, enums, `InterhumanAPIError`), never on raw JSON: if the server answers something the
client cannot parse, the test sees what a user of the client would see.

Run by tests/sdk/run.sh, which starts the server and sets:
  SDK_BASE_URL          http://127.0.0.1:<port>
  SDK_KEY               an API key with every scope (account `sdk`)
  SDK_OTHER_KEY         an API key of another account (`sdk-other`)
  SDK_STREAM_ONLY_KEY   an API key of `sdk` with `service.stream` alone
  SDK_ATTUNE_BIN        the `attune` binary (keys created and revoked mid-test)
  ATTUNE_STORE_PATH     the server's store, for that binary
ONLY=name1,name2 runs just those tests. Prints one line per test, then 'N passed, N failed';
exits 1 when any failed.

A test tied to one of the defects listed in issue 11 says so (`defect=N`), so a failure
names the defect it is waiting for.
"""

import asyncio
import io
import os
import pathlib
import re
import subprocess
import sys
import time
import traceback
import wave
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import httpx
from interhumanai import (
    NO_GUIDANCE,
    SDK_HEADER_NAME,
    AnalysisGroup,
    AnalysisResult,
    AuthClient,
    ClientTokenResponse,
    ConversationQualityUpdatedEvent,
    ConversationQualityValues,
    EngagementLevel,
    EngagementUpdatedEvent,
    ErrorEvent,
    Feedback,
    GoalDimension,
    IncludeFlag,
    InterhumanAPIError,
    InterhumanClient,
    InterhumanError,
    NoFeedback,
    RawAudioFormat,
    RealtimeRecommendationFrequency,
    RealtimeRecommendationGeneratedEvent,
    RealtimeSessionReadyEvent,
    RealtimeSessionUpdatedEvent,
    RealtimeSignalDetectedEvent,
    SessionClosingEvent,
    SessionEndedEvent,
    SessionReadyEvent,
    SessionUpdatedEvent,
    Signal,
    SignalDetectedEvent,
    SignalEndedEvent,
    SignalType,
    SignalUpdatedEvent,
    StreamModel,
    TranscriptGeneratedEvent,
    TranscriptSegment,
    UnknownEvent,
    UploadJob,
    UploadJobIncludeFlag,
    UploadJobSignal,
    UploadJobStatus,
    UploadModel,
    __version__,
)

BASE_URL = os.environ["SDK_BASE_URL"]
KEY = os.environ["SDK_KEY"]
OTHER_KEY = os.environ["SDK_OTHER_KEY"]
STREAM_ONLY_KEY = os.environ["SDK_STREAM_ONLY_KEY"]
ATTUNE_BIN = os.environ["SDK_ATTUNE_BIN"]

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures"
MIB = 1024 * 1024
# The interface's limits (interface.md, "Limits").
MAX_UPLOAD_BYTES = 32 * MIB
MAX_SEGMENT_BYTES = 32 * MIB
SOCKET_READ_CAP = 64 * MIB
# What `inter-2-audio` can hear (interface.md: a subset of inter-2's signals).
AUDIO_SIGNALS = {
    SignalType.AGREEMENT,
    SignalType.CONFIDENCE,
    SignalType.FRUSTRATION,
    SignalType.HESITATION,
    SignalType.INTEREST,
    SignalType.UNCERTAINTY,
}
ALL_STREAM_SCOPES = ["service.stream", "service.stream.inter-2", "service.stream.inter-2-audio"]
UPLOAD_SCOPES = ["service.upload", "service.upload.inter-2"]
# Generous bounds: a wedged session or request fails its test instead of hanging the suite.
TEST_TIMEOUT = 180.0
SESSION_TIMEOUT = 120.0
READY_TIMEOUT = 20.0
POLL = 0.25


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def client(key: str = KEY, **kwargs: Any) -> InterhumanClient:
    return InterhumanClient(access_token=key, base_url=BASE_URL, **kwargs)


def auth() -> AuthClient:
    return AuthClient(base_url=BASE_URL)


# ---------------------------------------------------------------------------------------------
# A minimal runner: tests register themselves in order; each runs on its own event loop.

Test = Callable[[], Awaitable[None]]
TESTS: list[tuple[str, Test, int | None]] = []


def test(defect: int | None = None) -> Callable[[Test], Test]:
    def register(fn: Test) -> Test:
        TESTS.append((fn.__name__, fn, defect))
        return fn

    return register


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


async def api_error(call: Awaitable[Any]) -> InterhumanAPIError:
    """The `InterhumanAPIError` a call raises (it must raise one)."""
    try:
        result = await call
    except InterhumanAPIError as error:
        return error
    raise AssertionError(f"expected an InterhumanAPIError, the call answered {result!r}")


async def expect_api_error(call: Awaitable[Any], status: int, error_id: str) -> InterhumanAPIError:
    """Asserts the call fails the way the client reports an API error: the HTTP status, the
    error id, the correlation id and a link to the error's documentation anchor."""
    error = await api_error(call)
    check(
        (error.status, error.error_id) == (status, error_id),
        f"expected HTTP {status} {error_id}, the client raised status={error.status} "
        f"error_id={error.error_id}: {error}"
        + (" (status 0: the client got no HTTP answer at all)" if error.status == 0 else ""),
    )
    check(
        isinstance(error.correlation_id, str) and len(error.correlation_id) > 0,
        f"no correlation id in {error.body}",
    )
    # The server's default docs address: its own base URL, port included.
    check(
        isinstance(error.link, str)
        and error.link.startswith(f"{BASE_URL}/docs/api-reference/error-handling#{error_id}-"),
        f"link {error.link!r} does not point at the {error_id} anchor under {BASE_URL}",
    )
    return error


def check_cqi(values: ConversationQualityValues, what: str) -> None:
    dims = [values.clarity, values.authority, values.energy, values.rapport, values.learning]
    for value in [*dims, values.quality_index]:
        check(0 <= value <= 100, f"{what}: score {value} outside 0-100 in {values}")
    mean = sum(dims) / 5
    check(
        abs(values.quality_index - mean) < 1e-6,
        f"{what}: quality_index {values.quality_index} is not the mean {mean} of {values}",
    )


# ---------------------------------------------------------------------------------------------
# Stream helpers.


async def collect(session: Any, timeout: float = SESSION_TIMEOUT) -> tuple[list[Any], list[str]]:
    """Every event up to the close, and every frame the client refused to parse (the client
    raises those from iteration and keeps the session going)."""
    events: list[Any] = []
    refused: list[str] = []

    async def run() -> None:
        while True:
            try:
                async for event in session:
                    events.append(event)
                return
            except InterhumanError as error:
                refused.append(str(error))

    try:
        await asyncio.wait_for(run(), timeout)
    except asyncio.TimeoutError:
        raise AssertionError(
            f"the session did not close within {timeout} s; events so far: "
            f"{[type_name(e) for e in events]}, unparsable: {refused}"
        ) from None
    return events, refused


def type_name(event: Any) -> str:
    return f"Unknown({event.type})" if isinstance(event, UnknownEvent) else type(event).__name__


def of(events: list[Any], kind: type) -> list[Any]:
    return [event for event in events if isinstance(event, kind)]


async def ready(session: Any) -> Any:
    """`wait_for_session_ready`, bounded: a `session.ready` the client cannot parse never
    resolves it (the client then waits for the server's idle timeout)."""
    try:
        return await asyncio.wait_for(session.wait_for_session_ready(), READY_TIMEOUT)
    except asyncio.TimeoutError:
        pending = []
        while not session._events.empty():  # what the client queued instead of readiness
            pending.append(str(session._events.get_nowait()))
        raise AssertionError(
            f"the client never saw the session as ready within {READY_TIMEOUT} s; it queued: "
            f"{pending}"
        ) from None


async def next_of(session: Any, kind: type, timeout: float = 20.0) -> Any:
    """Reads events until one of `kind`; fails on an `ErrorEvent` or a refused frame first."""

    async def run() -> Any:
        async for event in session:
            if isinstance(event, kind):
                return event
            check(not isinstance(event, ErrorEvent), f"error before {kind.__name__}: {event}")
        raise AssertionError(f"the session closed before a {kind.__name__}: {session.close_info}")

    return await asyncio.wait_for(run(), timeout)


async def send_cut(session: Any, media: bytes, sizes: list[int], *, audio: bool = False) -> None:
    """Sends `media` as binary frames of the given sizes, cycling, whatever the boundaries."""
    send = session.send_audio if audio else session.send_video
    at, i = 0, 0
    while at < len(media):
        end = min(at + sizes[i % len(sizes)], len(media))
        await send(media[at:end])
        at, i = end, i + 1


def pseudo_random_sizes(count: int, seed: int, most: int) -> list[int]:
    sizes, state = [], seed
    for _ in range(count):
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        sizes.append(1 + (state >> 33) % most)
    return sizes


def check_clean_end(events: list[Any], refused: list[str], session: Any) -> None:
    """A graceful close as the interface's table has it, and nothing the client refused."""
    check(not refused, f"the client refused frames: {refused}")
    errors = of(events, ErrorEvent)
    check(not errors, f"error events: {[e.data for e in errors]}")
    check(len(of(events, SessionClosingEvent)) == 1, f"{[type_name(e) for e in events]}")
    check(
        bool(events)
        and isinstance(events[-1], SessionEndedEvent)
        and events[-1].data.reason == "client_shutdown",
        f"the last event is {events[-1] if events else None}",
    )
    check(session.close_info.code == 1000, f"closed with {session.close_info}")


def check_signal_lifecycle(events: list[Any]) -> None:
    """signal.detected / updated / ended follow the per-type activity table."""
    active: set[SignalType] = set()
    for event in events:
        if isinstance(event, SignalDetectedEvent | RealtimeSignalDetectedEvent):
            check(event.data.signal_type not in active, f"detected while active: {event.data}")
            active.add(event.data.signal_type)
        elif isinstance(event, SignalUpdatedEvent):
            check(event.data.signal_type in active, f"updated while inactive: {event.data}")
        elif isinstance(event, SignalEndedEvent):
            check(event.data.signal_type in active, f"ended while inactive: {event.data}")
            active.discard(event.data.signal_type)
    check(not active, f"signals still active at session.ended: {active}")


def speech_pcm() -> bytes:
    """About 31 s of speech (three espeak-ng recordings) as raw s16le mono at 16 kHz."""
    return b"".join(
        fixture(f"speech/{name}.wav")[44:] for name in ["baseline", "hesitant", "two_voices"]
    )


# ---------------------------------------------------------------------------------------------
# v1 upload.


@test()
async def v1_upload_with_cqi_and_goal_dimensions() -> None:
    result = await client().upload.analyze(
        FIXTURES / "mp4_h264_aac.mp4",
        content_type="video/mp4",
        include=[
            IncludeFlag.CONVERSATION_QUALITY_OVERALL,
            IncludeFlag.CONVERSATION_QUALITY_TIMELINE,
        ],
        goal_dimensions=[GoalDimension.CLARITY, GoalDimension.RAPPORT],
    )
    check(isinstance(result, AnalysisResult), f"{type(result)}")
    # Engagement: contiguous windows over the 5 s file.
    states = result.engagement_state
    check(len(states) >= 1, "no engagement state")
    check(states[0].start == 0, f"{states[0]}")
    for before, after in zip(states, states[1:]):
        check(before.end == after.start, f"not contiguous: {before} {after}")
    check(abs(states[-1].end - 5.0) < 0.5, f"engagement ends at {states[-1].end}")
    check(all(isinstance(s.state, EngagementLevel) for s in states), f"{states}")
    # Whole-file signals with their evidence; v1 reads video with inter-2.
    for signal in result.signals:
        check(isinstance(signal, Signal) and isinstance(signal.type, SignalType), f"{signal}")
        check(0 <= signal.start < signal.end <= 5.5, f"{signal}")
        check(signal.modality == ["video"], f"modality {signal.modality} of {signal}")
    # Both CQI sections, as asked.
    quality = result.conversation_quality
    check(quality is not None, "conversation_quality missing though both flags were sent")
    check_cqi(quality.overall, "overall")
    check(len(quality.timeline) >= 1, "empty CQI timeline")
    for entry in quality.timeline:
        check(entry.start < entry.end, f"{entry}")
        check_cqi(entry.values, f"timeline {entry.start}-{entry.end}")
    # Goal dimensions ask for feedback: one of the two typed variants.
    feedback = result.feedback
    check(isinstance(feedback, Feedback | NoFeedback), f"feedback is {feedback!r}")
    if isinstance(feedback, Feedback):
        check(len(feedback.message) > 0, f"{feedback}")
        check(
            0 < len(feedback.active_dimensions)
            and set(feedback.active_dimensions) <= {GoalDimension.CLARITY, GoalDimension.RAPPORT},
            f"active dimensions {feedback.active_dimensions}",
        )
    else:
        check(len(feedback.reason) > 0, f"{feedback}")


@test()
async def v1_upload_without_options_has_no_optional_sections() -> None:
    result = await client().upload.analyze(fixture("webm_vp8_vorbis.webm"), filename="talk.webm")
    # The client documents `feedback` as present only when asked for; Attune answers an
    # explicit `no_feedback` saying why, which the client parses as NoFeedback.
    check(result.feedback is None or isinstance(result.feedback, NoFeedback), f"{result.feedback}")
    check(result.conversation_quality is None, f"{result.conversation_quality}")
    check(len(result.engagement_state) >= 1, "no engagement state")


@test()
async def v1_upload_conversation_context_drives_feedback() -> None:
    result = await client().upload.analyze(
        FIXTURES / "mkv_h264_vorbis.mkv",
        conversation_context="I need to explain our pricing clearly and build trust.",
        goal_dimensions=[GoalDimension.ENERGY],
    )
    feedback = result.feedback
    check(isinstance(feedback, Feedback | NoFeedback), f"{feedback!r}")
    if isinstance(feedback, Feedback):
        # The context is the sole source: `energy` from goal_dimensions is ignored.
        check(GoalDimension.ENERGY not in feedback.active_dimensions, f"{feedback}")


@test(defect=3)
async def v1_upload_of_a_video_without_audio_is_analyzed_from_its_picture() -> None:
    # A v2 difference (ih5008 there), not a v1 rule: v1 reads the picture alone.
    result = await client().upload.analyze(FIXTURES / "video_only.mp4")
    check(len(result.engagement_state) >= 1, "no engagement state")
    for signal in result.signals:
        check(signal.modality == ["video"], f"{signal}")


# ---------------------------------------------------------------------------------------------
# v2 upload jobs.


def check_envelope(job: UploadJob, model: UploadModel) -> None:
    check(re.fullmatch(r"[0-9a-f]{32}", job.job_id) is not None, f"job_id {job.job_id!r}")
    check(job.status_url == f"/v2/upload/jobs/{job.job_id}", f"status_url {job.status_url!r}")
    check(job.model is model, f"model {job.model}")
    check(
        job.expires_at - job.created_at == timedelta(hours=1), f"{job.created_at} {job.expires_at}"
    )
    check(job.created_at.utcoffset() == timedelta(0), f"created_at {job.created_at} not UTC")
    if job.status is UploadJobStatus.COMPLETED:
        check(job.result is not None and job.error is None, f"{job}")
    elif job.status is UploadJobStatus.FAILED:
        check(job.result is None and job.error is not None, f"{job}")
    else:
        check(job.result is None and job.error is None, f"{job}")


@test()
async def v2_submit_then_poll_until_completed() -> None:
    upload = client().upload
    job = await upload.submit(
        FIXTURES / "mp4_h264_aac.mp4",
        model=UploadModel.INTER_2,
        include=[
            UploadJobIncludeFlag.SIGNALS,
            UploadJobIncludeFlag.CONVERSATION_QUALITY_OVERALL,
            IncludeFlag.CONVERSATION_QUALITY_TIMELINE,
        ],
    )
    # Without wait_seconds: the 202 envelope as recorded at submit.
    check(job.status is UploadJobStatus.QUEUED, f"status {job.status}")
    check_envelope(job, UploadModel.INTER_2)
    read = await upload.get_job(job.job_id)
    check(read.job_id == job.job_id and read.created_at == job.created_at, f"{read}")
    check_envelope(read, UploadModel.INTER_2)
    done = await upload.wait_for_job(job, timeout=120, poll_interval=POLL)
    check(done.status is UploadJobStatus.COMPLETED, f"{done.status}: {done.error}")
    check_envelope(done, UploadModel.INTER_2)
    result = done.result
    check(result.window_seconds == 5.0, f"window_seconds {result.window_seconds}")
    check(abs(result.duration_seconds - 5.0) < 0.5, f"duration {result.duration_seconds}")
    check(len(result.windows) == 1, f"{len(result.windows)} windows for 5 s")
    for i, window in enumerate(result.windows):
        check(window.index == i and window.start_seconds == 5.0 * i, f"{window}")
        check(isinstance(window.engagement_status, EngagementLevel), f"{window}")
        for signal in window.signals:
            check(isinstance(signal, UploadJobSignal), f"{signal}")
            check(
                (signal.start, signal.end) == (window.start_seconds, window.end_seconds),
                f"{signal}",
            )
    check(result.signals is not None, "include[]=signals but no whole-file signals")
    starts = [s.start for s in result.signals]
    check(starts == sorted(starts), f"whole-file signals out of order: {starts}")
    quality = result.conversation_quality
    check(quality is not None and quality.overall is not None, f"{quality}")
    check(quality.timeline is not None and len(quality.timeline) >= 1, f"{quality}")
    check_cqi(quality.overall, "overall")


@test()
async def v2_submit_with_wait_seconds_answers_the_finished_job() -> None:
    job = await client().upload.submit(
        fixture("mov_h264_aac.mov"), model="inter-2", wait_seconds=60, filename="meeting.mov"
    )
    check(job.status is UploadJobStatus.COMPLETED, f"{job.status}: {job.error}")
    check_envelope(job, UploadModel.INTER_2)
    # No include flag: no whole-file sections.
    check(job.result.signals is None and job.result.conversation_quality is None, f"{job.result}")
    check(len(job.result.windows) >= 1, f"{job.result}")
    # A terminal envelope is returned by wait_for_job without another request.
    check(await client().upload.wait_for_job(job) is job, "wait_for_job re-read a terminal job")


@test()
async def v2_audio_model_hears_a_subset_of_the_signals() -> None:
    job = await client().upload.submit(
        FIXTURES / "speech/hesitant.wav",
        model=UploadModel.INTER_2_AUDIO,
        wait_seconds=60,
        include=[UploadJobIncludeFlag.SIGNALS],
    )
    check(job.status is UploadJobStatus.COMPLETED, f"{job.status}: {job.error}")
    check_envelope(job, UploadModel.INTER_2_AUDIO)
    check(len(job.result.windows) >= 2, f"{len(job.result.windows)} windows")
    heard = {s.type for w in job.result.windows for s in w.signals} | {
        s.type for s in job.result.signals
    }
    check(heard <= AUDIO_SIGNALS, f"inter-2-audio reported {heard - AUDIO_SIGNALS}")
    check(len(job.result.signals) >= 1, "nothing heard in hesitant speech")


@test()
async def v2_upload_without_signals_scores_the_neutral_cqi() -> None:
    # A calm, neutral monologue (10 s) in which nothing is detected: the requested sections are
    # still there, the signal list empty (not absent) and every score the neutral 50.
    job = await client().upload.submit(
        FIXTURES / "speech" / "baseline.wav",
        model=UploadModel.INTER_2_AUDIO,
        wait_seconds=60,
        include=[UploadJobIncludeFlag.SIGNALS, UploadJobIncludeFlag.CONVERSATION_QUALITY_OVERALL],
    )
    check(job.status is UploadJobStatus.COMPLETED, f"{job.status}: {job.error}")
    check(job.result.signals == [], f"signals {job.result.signals}")
    overall = job.result.conversation_quality.overall
    check(
        [
            overall.quality_index,
            overall.clarity,
            overall.authority,
            overall.energy,
            overall.rapport,
            overall.learning,
        ]
        == [50] * 6,
        f"{overall}",
    )
    check(job.result.conversation_quality.timeline is None, "timeline not requested")


def silent_wav(seconds: float) -> bytes:
    """A mono 16 kHz s16le WAV of digital silence: a muted microphone."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(bytes(int(seconds * 16000) * 2))
    return buffer.getvalue()


@test()
async def v2_job_that_fails_reports_its_error() -> None:
    # Validation passes at submit; the audio model then rejects a silent track (ih5007) and
    # the job ends failed, which wait_for_job returns rather than raises.
    upload = client().upload
    job = await upload.submit(
        silent_wav(4.0), model=UploadModel.INTER_2_AUDIO, filename="muted.wav"
    )
    done = await upload.wait_for_job(job, timeout=120, poll_interval=POLL)
    check(done.status is UploadJobStatus.FAILED, f"{done.status}: {done.result}")
    check_envelope(done, UploadModel.INTER_2_AUDIO)
    check(done.error.error_id == "ih5007", f"{done.error}")
    check(
        bool(done.error.message) and done.error.link.endswith("#ih5007-content-rejected-by-model"),
        f"{done.error}",
    )


@test()
async def v2_jobs_are_visible_to_their_account_only() -> None:
    job = await client().upload.submit(FIXTURES / "avi_mpeg4_mp3.avi", model=UploadModel.INTER_2)
    await expect_api_error(client(OTHER_KEY).upload.get_job(job), 404, "ih4021")
    done = await client().upload.wait_for_job(job.job_id, timeout=120, poll_interval=POLL)
    check(done.status is UploadJobStatus.COMPLETED, f"{done.status}: {done.error}")


# ---------------------------------------------------------------------------------------------
# Every HTTP error the client can provoke, as its InterhumanAPIError.


@test(defect=2)
async def ih2001_wrong_key_on_uploads() -> None:
    # The body streams (httpx, async): the refusal must still reach the client.
    bad = client("ih_this-is-not-a-key")
    await expect_api_error(bad.upload.analyze(FIXTURES / "mp4_h264_aac.mp4"), 401, "ih2001")
    await expect_api_error(
        bad.upload.submit(FIXTURES / "mp4_h264_aac.mp4", model=UploadModel.INTER_2), 401, "ih2001"
    )


@test()
async def ih2001_wrong_key_on_job_reads_and_token_minting() -> None:
    await expect_api_error(client("ih_wrong").upload.get_job("0" * 32), 401, "ih2001")
    await expect_api_error(auth().create_client_token(api_key="ih_wrong"), 401, "ih2001")


@test()
async def ih2002_no_key() -> None:
    # With an empty `access_token` the client builds `Authorization: Bearer `, which httpx
    # refuses to send (status 0, no request made). Its token calls carry the key in the body
    # instead, so an unset key variable reaches the server there.
    await expect_api_error(auth().create_client_token(api_key=""), 401, "ih2002")
    await expect_api_error(auth().revoke_client_token(api_key="", token="att_x"), 401, "ih2002")


@test()
async def ih2003_key_without_the_upload_scope() -> None:
    await expect_api_error(client(STREAM_ONLY_KEY).upload.get_job("0" * 32), 403, "ih2003")


@test()
async def ih4001_no_file_part() -> None:
    # The client always names its part `file`; a request hook on the httpx client it accepts
    # (`http_client=`) renames it, as a proxy or a hand-edited integration might.
    async def rename_file_part(request: httpx.Request) -> None:
        body = await request.aread()
        renamed = body.replace(b'name="file"', b'name="clip"', 1)
        check(renamed != body, "the hook found no file part to rename")
        request.stream = httpx.ByteStream(renamed)

    async with httpx.AsyncClient(event_hooks={"request": [rename_file_part]}) as http:
        shared = client(http_client=http)
        await expect_api_error(
            shared.upload.submit(FIXTURES / "mp4_h264_aac.mp4", model=UploadModel.INTER_2),
            400,
            "ih4001",
        )
        await expect_api_error(shared.upload.analyze(FIXTURES / "mp4_h264_aac.mp4"), 400, "ih4001")


@test(defect=8)
async def ih4002_a_container_the_service_does_not_read() -> None:
    pdf = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n" * 64
    await expect_api_error(
        client().upload.submit(pdf, model=UploadModel.INTER_2, filename="slides.pdf"), 400, "ih4002"
    )


@test(defect=2)
async def ih4003_a_file_over_32_mb() -> None:
    # Generated here, not committed: a real video followed by padding past the limit.
    big = fixture("mp4_h264_aac.mp4")
    big += bytes(MAX_UPLOAD_BYTES + 1 - len(big))
    check(len(big) == MAX_UPLOAD_BYTES + 1, f"{len(big)}")
    await expect_api_error(client().upload.submit(big, model=UploadModel.INTER_2), 413, "ih4003")
    await expect_api_error(client().upload.analyze(big), 413, "ih4003")


@test()
async def ih4005_wait_seconds_above_the_bound_and_unknown_models() -> None:
    media = FIXTURES / "mp4_h264_aac.mp4"
    await expect_api_error(
        client().upload.submit(media, model=UploadModel.INTER_2, wait_seconds=121), 400, "ih4005"
    )
    await expect_api_error(client().upload.submit(media, model="inter-9"), 400, "ih4005")


@test()
async def ih4007_media_under_three_seconds() -> None:
    await expect_api_error(
        client().upload.submit(FIXTURES / "short_2s.mp4", model=UploadModel.INTER_2), 400, "ih4007"
    )
    await expect_api_error(client().upload.analyze(FIXTURES / "short_2s.mp4"), 400, "ih4007")
    await expect_api_error(
        client().upload.submit(FIXTURES / "short_2s.wav", model=UploadModel.INTER_2_AUDIO),
        400,
        "ih4007",
    )


@test()
async def ih4020_the_reserved_model() -> None:
    error = await expect_api_error(
        client().upload.submit(FIXTURES / "mp4_h264_aac.mp4", model=UploadModel.INTER_2_DEEP),
        400,
        "ih4020",
    )
    check("inter-2" in str(error), f"the message does not list the route's models: {error}")


@test()
async def ih4021_unknown_job() -> None:
    await expect_api_error(client().upload.get_job("0" * 32), 404, "ih4021")
    await expect_api_error(client().upload.wait_for_job("f" * 32, timeout=5), 404, "ih4021")


@test()
async def ih5001_no_video_stream_or_an_empty_file() -> None:
    await expect_api_error(
        client().upload.submit(FIXTURES / "audio_only_for_inter2.mp4", model=UploadModel.INTER_2),
        422,
        "ih5001",
    )
    await expect_api_error(
        client().upload.submit(b"", model=UploadModel.INTER_2, filename="empty.mp4"), 422, "ih5001"
    )


@test()
async def ih5002_a_corrupted_container() -> None:
    await expect_api_error(
        client().upload.submit(FIXTURES / "truncated.mp4", model=UploadModel.INTER_2), 422, "ih5002"
    )
    await expect_api_error(client().upload.analyze(FIXTURES / "truncated.mp4"), 422, "ih5002")


@test()
async def ih5008_inter2_upload_without_audio() -> None:
    await expect_api_error(
        client().upload.submit(FIXTURES / "video_only.mp4", model=UploadModel.INTER_2),
        422,
        "ih5008",
    )


# ---------------------------------------------------------------------------------------------
# Client tokens.


@test()
async def client_token_mint_defaults_and_clamping() -> None:
    token = await auth().create_client_token(api_key=KEY)
    check(isinstance(token, ClientTokenResponse), f"{token}")
    check(token.token_type == "Bearer", f"{token.token_type}")
    check(token.expires_in == 300 and token.scope == "service.stream", f"{token}")
    check(token.max_concurrent == 1, f"max_concurrent {token.max_concurrent}")
    check(token.access_token != KEY and len(token.access_token) > 16, "not a new credential")
    short = await auth().create_client_token(api_key=KEY, expires_in=5)
    long = await auth().create_client_token(api_key=KEY, expires_in=86400)
    check(
        (short.expires_in, long.expires_in) == (60, 3600), f"{short.expires_in} {long.expires_in}"
    )
    # A token cannot mint tokens.
    await expect_api_error(auth().create_client_token(api_key=token.access_token), 403, "ih2003")


@test()
async def client_token_mint_use_revoke() -> None:
    token = await auth().create_client_token(
        api_key=KEY,
        scopes=UPLOAD_SCOPES,
        expires_in=600,
        max_video_seconds=600,
        max_concurrent=2,
        max_bytes=8 * MIB,
        allowed_origins=["https://app.example.com"],
    )
    check(set(token.scope.split(" ")) == set(UPLOAD_SCOPES), f"scope {token.scope!r}")
    check(token.expires_in == 600, f"{token.expires_in}")
    check(
        (token.max_video_seconds, token.max_concurrent, token.max_bytes) == (600, 2, 8 * MIB),
        f"{token}",
    )
    check(token.allowed_origins == ["https://app.example.com"], f"{token.allowed_origins}")
    # Without an Origin (or from another one) the token is refused: ih2013.
    await expect_api_error(client(token.access_token).upload.get_job("0" * 32), 403, "ih2013")
    async with httpx.AsyncClient(headers={"Origin": "https://evil.example.com"}) as http:
        await expect_api_error(
            client(token.access_token, http_client=http).upload.get_job("0" * 32), 403, "ih2013"
        )
    # From the listed origin (a browser's fetch sends it), used as-is by the client.
    async with httpx.AsyncClient(
        headers={"Origin": "https://app.example.com"}, timeout=120
    ) as http:
        browser = client(token.access_token, http_client=http)
        job = await browser.upload.submit(
            FIXTURES / "mp4_h264_aac.mp4", model=UploadModel.INTER_2, wait_seconds=60
        )
        check(job.status is UploadJobStatus.COMPLETED, f"{job.status}: {job.error}")
        check((await browser.upload.get_job(job)).job_id == job.job_id, "token cannot read its job")
        # Revoked: refused with ih2014 from then on; revoking again still succeeds.
        check(
            await auth().revoke_client_token(api_key=KEY, token=token.access_token) is None,
            "revoke",
        )
        await expect_api_error(browser.upload.get_job(job), 401, "ih2014")
    await auth().revoke_client_token(api_key=KEY, token=token.access_token)
    # A well-formed token that was never minted: nothing to revoke, still a success.
    never = token.access_token[:-1] + ("0" if token.access_token[-1] != "0" else "1")
    await auth().revoke_client_token(api_key=KEY, token=never)


@test(defect=2)
async def client_token_revoked_is_refused_on_upload() -> None:
    token = await auth().create_client_token(api_key=KEY, scopes=UPLOAD_SCOPES)
    await auth().revoke_client_token(api_key=KEY, token=token.access_token)
    await expect_api_error(
        client(token.access_token).upload.submit(
            FIXTURES / "mp4_h264_aac.mp4", model=UploadModel.INTER_2
        ),
        401,
        "ih2014",
    )


@test()
async def client_token_opens_a_stream_and_is_refused_once_revoked() -> None:
    token = await auth().create_client_token(api_key=KEY, scopes=ALL_STREAM_SCOPES)
    async with client(token.access_token).stream(api_version="v2") as session:
        check(isinstance(await ready(session), SessionReadyEvent), "not ready")
        for name in ["seg0", "seg1", "seg2"]:
            await session.send_video(fixture(f"segments/{name}.webm"))
        await session.request_close()
        events, refused = await collect(session)
    check_clean_end(events, refused, session)
    await auth().revoke_client_token(api_key=KEY, token=token.access_token)
    async with client(token.access_token).stream(api_version="v2") as session:
        try:
            await asyncio.wait_for(session.wait_for_session_ready(), READY_TIMEOUT)
            raise AssertionError("a revoked token's session became ready")
        except InterhumanError as error:
            check("ih2014" in str(error), f"{error}")
        check(session.close_info.code == 4001, f"{session.close_info}")


async def revoked_mid_session(key: str, revoke: Callable[[], Awaitable[None]], code: str) -> None:
    async with client(key).stream(api_version="v2") as session:
        await ready(session)
        await session.send_video(fixture("segments/seg0.webm"))
        await revoke()
        # The next chunks after the revocation end the session.
        for name in ["seg1", "seg2"]:
            try:
                await session.send_video(fixture(f"segments/{name}.webm"))
            except InterhumanError:
                break  # already closed by the server
        try:
            events, refused = await collect(session, timeout=20)
        except AssertionError as error:
            raise AssertionError(f"the session went on after the revocation: {error}") from None
    errors = [e.data.code for e in of(events, ErrorEvent)]
    check(errors[-1:] == [code], f"errors {errors}, expected {code} last")
    check(session.close_info.code == 4001, f"closed with {session.close_info}")


@test(defect=4)
async def revoking_a_client_token_ends_its_live_session() -> None:
    token = await auth().create_client_token(api_key=KEY, scopes=ALL_STREAM_SCOPES)

    async def revoke() -> None:
        await auth().revoke_client_token(api_key=KEY, token=token.access_token)

    await revoked_mid_session(token.access_token, revoke, "ih2014")


def attune(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ATTUNE_BIN, *args], capture_output=True, text=True, check=True, timeout=60
    )


@test(defect=4)
async def revoking_an_api_key_ends_its_live_session() -> None:
    created = attune(
        "keys", "create", "--account", "sdk-revoked", "--scopes", ",".join(ALL_STREAM_SCOPES)
    )
    key = created.stdout.strip()
    key_id = re.search(r"Created key (\S+) for", created.stderr).group(1)

    async def revoke() -> None:
        await asyncio.to_thread(attune, "keys", "revoke", key_id)

    await revoked_mid_session(key, revoke, "ih2001")


# ---------------------------------------------------------------------------------------------
# Streams.


@test()
async def v1_stream_continuous_webm_cut_anywhere() -> None:
    media = fixture("segments/continuous.webm")
    async with client().stream() as session:  # the client's default is v1
        event = await ready(session)
        check(isinstance(event, SessionReadyEvent), f"{event}")
        data = event.data
        check(data.max_segment_size_bytes == MAX_SEGMENT_BYTES, f"{data}")
        check(
            data.session_idle_timeout_seconds == 300 and data.session_max_duration_seconds == 3600,
            f"{data}",
        )
        check(data.supported_session_config_options.model is None, "v1 advertises models")
        await session.update_config(include=[IncludeFlag.CONVERSATION_QUALITY_OVERALL])
        updated = await next_of(session, SessionUpdatedEvent)
        check(updated.data.include == [IncludeFlag.CONVERSATION_QUALITY_OVERALL], f"{updated.data}")
        check(updated.data.model is None, f"{updated.data}")
        await send_cut(session, media, pseudo_random_sizes(64, seed=7, most=9000))
        await session.request_close()
        events, refused = await collect(session)
    check_clean_end(events, refused, session)
    check(len(of(events, EngagementUpdatedEvent)) >= 1, f"{[type_name(e) for e in events]}")
    for event in of(events, SignalDetectedEvent) + of(events, SignalUpdatedEvent):
        check(event.data.modality == ["video"], f"v1 modality {event.data.modality}")
    quality = of(events, ConversationQualityUpdatedEvent)
    check(len(quality) >= 1, f"{[type_name(e) for e in events]}")
    for q in quality:
        check(q.data.overall is not None and q.data.timeline is None, f"{q.data}")
        check_cqi(q.data.overall, "stream overall")
    check_signal_lifecycle(events)


@test()
async def v2_stream_self_contained_webm_segments() -> None:
    async with client().stream(api_version="v2", model=StreamModel.INTER_2) as session:
        event = await ready(session)
        models = event.data.supported_session_config_options.model
        check(models is not None and StreamModel.INTER_2 in models, f"models {models}")
        for _ in range(2):
            for name in ["seg0", "seg1", "seg2"]:
                await session.send_video(fixture(f"segments/{name}.webm"))
        await session.request_close()
        events, refused = await collect(session)
    check_clean_end(events, refused, session)
    engagement = of(events, EngagementUpdatedEvent)
    check(len(engagement) >= 1, f"{[type_name(e) for e in events]}")
    check(all(0 <= e.data.start < 18 for e in engagement), f"{[e.data for e in engagement]}")
    detected = of(events, SignalDetectedEvent)
    check(len(detected) >= 1, f"{[type_name(e) for e in events]}")
    for event in detected + of(events, SignalUpdatedEvent):
        check(event.data.modality is None, f"v2 modality {event.data.modality}")
    check_signal_lifecycle(events)


@test()
async def v2_stream_fragmented_mp4_cut_at_odd_offsets() -> None:
    media = fixture("mp4frag_h264_aac.mp4")
    async with client().stream(api_version="v2") as session:
        await ready(session)
        await session.update_config(
            include=[
                IncludeFlag.CONVERSATION_QUALITY_OVERALL,
                IncludeFlag.CONVERSATION_QUALITY_TIMELINE,
            ]
        )
        updated = await next_of(session, SessionUpdatedEvent)
        check(updated.data.model is StreamModel.INTER_2, f"{updated.data}")
        check(
            set(updated.data.include)
            == {
                IncludeFlag.CONVERSATION_QUALITY_OVERALL,
                IncludeFlag.CONVERSATION_QUALITY_TIMELINE,
            },
            f"{updated.data}",
        )
        await send_cut(session, media, [1, 7, 4093, 333, 10007])
        await session.request_close()
        events, refused = await collect(session)
    check_clean_end(events, refused, session)
    check(len(of(events, EngagementUpdatedEvent)) >= 1, f"{[type_name(e) for e in events]}")
    quality = of(events, ConversationQualityUpdatedEvent)
    check(len(quality) >= 1, f"{[type_name(e) for e in events]}")
    for q in quality:
        check(
            q.data.overall is not None
            and q.data.timeline is not None
            and len(q.data.timeline) == 1,
            f"{q.data}",
        )
    for event in of(events, SignalDetectedEvent):
        check(event.data.modality is None, f"{event.data}")
    check_signal_lifecycle(events)


@test()
async def v2_stream_raw_pcm_cut_at_odd_offsets() -> None:
    pcm = speech_pcm()
    async with client().stream(api_version="v2", model=StreamModel.INTER_2_AUDIO) as session:
        event = await ready(session)
        check(
            StreamModel.INTER_2_AUDIO in event.data.supported_session_config_options.model,
            f"{event.data}",
        )
        await session.update_config(
            include=[IncludeFlag.CONVERSATION_QUALITY_TIMELINE],
            audio_format=RawAudioFormat(sample_rate=16000),
        )
        updated = await next_of(session, SessionUpdatedEvent)
        check(updated.data.model is StreamModel.INTER_2_AUDIO, f"{updated.data}")
        await send_cut(session, pcm, [4097, 1, 333, 16001], audio=True)
        await session.request_close()
        events, refused = await collect(session)
    check_clean_end(events, refused, session)
    detected = of(events, SignalDetectedEvent)
    check(len(detected) >= 1, f"{[type_name(e) for e in events]}")
    check({e.data.signal_type for e in detected} <= AUDIO_SIGNALS, f"{[e.data for e in detected]}")
    for e in detected:
        check(0 <= e.data.start < 32 and e.data.modality is None, f"{e.data}")
        check(e.data.rationale is not None and len(e.data.rationale) > 20, f"{e.data}")
    check(
        len(of(events, ConversationQualityUpdatedEvent)) >= 2, f"{[type_name(e) for e in events]}"
    )
    check_signal_lifecycle(events)


@test()
async def v2_stream_raw_pcm_at_24_khz() -> None:
    pcm = fixture("speech_24k_s16le.pcm")
    async with client().stream(api_version="v2", model="inter-2-audio") as session:
        await ready(session)
        await session.update_config(audio_format=RawAudioFormat(sample_rate=24000))
        await next_of(session, SessionUpdatedEvent)
        await send_cut(session, pcm, [9999], audio=True)  # odd: frames split samples in half
        await session.request_close()
        events, refused = await collect(session)
    check_clean_end(events, refused, session)
    check(len(of(events, EngagementUpdatedEvent)) >= 1, f"{[type_name(e) for e in events]}")


@test()
async def stream_handshake_refusals_reach_the_client() -> None:
    async with client("ih_not-a-key").stream(api_version="v2") as session:
        try:
            await asyncio.wait_for(session.wait_for_session_ready(), READY_TIMEOUT)
            raise AssertionError("a wrong key's session became ready")
        except InterhumanError as error:
            check("ih2001" in str(error), f"{error}")
        check(session.close_info.code == 4001, f"{session.close_info}")
    async with client().stream(api_version="v2", model="inter-9") as session:
        try:
            await asyncio.wait_for(session.wait_for_session_ready(), READY_TIMEOUT)
            raise AssertionError("an unknown model's session became ready")
        except InterhumanError as error:
            check("ih4005" in str(error), f"{error}")
        check(session.close_info.code == 1008, f"{session.close_info}")


@test()
async def stream_model_switch_before_media_and_the_scope_it_needs() -> None:
    # A key with `service.stream` alone covers inter-2 only: switching to inter-2-audio is
    # refused without ending the session, which stays on inter-2.
    async with client(STREAM_ONLY_KEY).stream(api_version="v2") as session:
        event = await ready(session)
        check(
            event.data.supported_session_config_options.model == [StreamModel.INTER_2],
            f"{event.data}",
        )
        await session.update_config(model=StreamModel.INTER_2_AUDIO)
        error = await next_of_error(session)
        check(error.data.code == "ih2003", f"{error.data}")
        await session.update_config(include=[])
        updated = await next_of(session, SessionUpdatedEvent)
        check(updated.data.model is StreamModel.INTER_2, f"{updated.data}")
        await session.request_close()
        events, refused = await collect(session)
    check_clean_end(events, refused, session)
    # With the scope, the switch applies before the first chunk, and audio-only media is read.
    async with client().stream(api_version="v2") as session:
        await ready(session)
        await session.update_config(model=StreamModel.INTER_2_AUDIO)
        updated = await next_of(session, SessionUpdatedEvent)
        check(updated.data.model is StreamModel.INTER_2_AUDIO, f"{updated.data}")
        await send_cut(session, fixture("webm_opus.webm"), [1000, 3])
        await session.request_close()
        events, refused = await collect(session)
    check_clean_end(events, refused, session)
    check(len(of(events, EngagementUpdatedEvent)) >= 1, f"{[type_name(e) for e in events]}")


@test()
async def stream_frame_over_the_segment_limit_is_refused_and_the_session_goes_on() -> None:
    async with client().stream(api_version="v2") as session:
        await ready(session)
        await session.send_video(bytes(MAX_SEGMENT_BYTES + 1))
        error = await next_of_error(session)
        check(error.data.code == "ih6002" and error.data.segment == 0, f"{error.data}")
        await session.send_video(fixture("segments/seg0.webm"))
        await session.request_close()
        events, refused = await collect(session)
    check_clean_end(events, refused, session)


async def next_of_error(session: Any, timeout: float = 30.0) -> ErrorEvent:
    async def run() -> ErrorEvent:
        async for event in session:
            if isinstance(event, ErrorEvent):
                return event
        raise AssertionError(f"closed without an error event: {session.close_info}")

    return await asyncio.wait_for(run(), timeout)


@test(defect=7)
async def stream_frame_over_the_socket_read_cap_closes_with_ih6002_and_1009() -> None:
    async with client().stream(api_version="v2") as session:
        await ready(session)
        try:
            await session.send_video(bytes(SOCKET_READ_CAP + 1))
        except InterhumanError:
            pass  # the server may close while the frame is still being written
        events, refused = await collect(session, timeout=60)
    codes = [e.data.code for e in of(events, ErrorEvent)]
    check(codes == ["ih6002"], f"error events {codes}, close {session.close_info}")
    check(session.close_info.code == 1009, f"closed with {session.close_info}")


# ---------------------------------------------------------------------------------------------
# Realtime.

TRANSCRIPT = [
    TranscriptSegment(
        start=0.0,
        end=6.0,
        text="So our platform does everything you need and more, and the price is great.",
        speaker=0,
    ),
    TranscriptSegment(start=6.0, end=7.0, text="Okay.", speaker=1),
    TranscriptSegment(
        start=7.0,
        end=8.5,
        text="And we also include onboarding for the whole team at no cost.",
        speaker=0,
    ),
    TranscriptSegment(start=8.5, end=9.5, text="How long does onboarding take?", speaker=1),
]
INSTRUCTIONS = "Coach the seller to ask more questions."


def check_realtime_run(
    events: list[Any], refused: list[str], session: Any
) -> RealtimeRecommendationGeneratedEvent:
    check_clean_end(events, refused, session)
    recommendations = of(events, RealtimeRecommendationGeneratedEvent)
    check(len(recommendations) >= 1, f"no recommendation: {[type_name(e) for e in events]}")
    first = recommendations[0].data
    check(first.start == 0.0 and 10.0 <= first.end <= 18.1, f"span {first.start}-{first.end}")
    check(0 < len(first.text) <= 280 and first.text != NO_GUIDANCE, f"text {first.text!r}")
    detected = of(events, RealtimeSignalDetectedEvent)
    check(len(detected) >= 1, f"{[type_name(e) for e in events]}")
    for event in detected:
        check(
            0 < len(event.data.modality) and set(event.data.modality) <= {"audio", "visual"},
            f"{event.data}",
        )
    # Events the client's realtime table does not know reach it as UnknownEvent, tolerated.
    unknown = {e.type for e in of(events, UnknownEvent)}
    check(unknown <= {"engagement.updated"}, f"unexpected unknown events {unknown}")
    check_signal_lifecycle(events)
    return recommendations[0]


@test(defect=1)
async def realtime_session_with_instructions_transcripts_and_recommendations() -> None:
    async with client().realtime() as session:
        event = await ready(session)
        check(isinstance(event, RealtimeSessionReadyEvent), f"{event}")
        options = event.data.supported_session_config_options
        check(isinstance(options.realtime_recommendation_instructions, str), f"{options}")
        check(
            options.realtime_recommendation_frequency
            == [
                RealtimeRecommendationFrequency.HIGH,
                RealtimeRecommendationFrequency.MEDIUM,
                RealtimeRecommendationFrequency.LOW,
            ],
            f"{options}",
        )
        check(
            set(options.analysis_groups) == {AnalysisGroup.VISUAL, AnalysisGroup.AUDIO},
            f"{options}",
        )
        await session.update_config(
            realtime_recommendation_instructions=INSTRUCTIONS,
            realtime_recommendation_frequency=RealtimeRecommendationFrequency.HIGH,
        )
        updated = await next_of(session, RealtimeSessionUpdatedEvent)
        check(updated.data.realtime_recommendation_instructions == INSTRUCTIONS, f"{updated.data}")
        check(
            updated.data.realtime_recommendation_frequency is RealtimeRecommendationFrequency.HIGH,
            f"{updated.data}",
        )
        check(
            set(updated.data.analysis_groups) == {AnalysisGroup.VISUAL, AnalysisGroup.AUDIO},
            f"{updated.data}",
        )
        await session.send_transcript(TRANSCRIPT)
        for _ in range(2):
            for name in ["seg0", "seg1", "seg2"]:
                await session.send_video(fixture(f"segments/{name}.webm"))
        await session.request_close()
        await session.send_transcript(TRANSCRIPT)  # accepted while draining too
        events, refused = await collect(session)
    check_realtime_run(events, refused, session)


@test(defect=10)
async def realtime_partial_config_keeps_what_it_does_not_name() -> None:
    # The client's update_config sends only the fields it is given: changing the frequency
    # alone must not clear the instructions (and with them the recommendations).
    async with client().realtime() as session:
        await ready(session)
        await session.update_config(
            realtime_recommendation_instructions=INSTRUCTIONS,
            realtime_recommendation_frequency=RealtimeRecommendationFrequency.LOW,
            analysis_groups=[AnalysisGroup.AUDIO, AnalysisGroup.VISUAL],
        )
        await next_of(session, RealtimeSessionUpdatedEvent)
        await session.update_config(
            realtime_recommendation_frequency=RealtimeRecommendationFrequency.HIGH
        )
        updated = await next_of(session, RealtimeSessionUpdatedEvent)
        check(updated.data.realtime_recommendation_instructions == INSTRUCTIONS, f"{updated.data}")
        check(
            updated.data.realtime_recommendation_frequency is RealtimeRecommendationFrequency.HIGH,
            f"{updated.data}",
        )
        await session.send_transcript(TRANSCRIPT)
        for _ in range(2):
            for name in ["seg0", "seg1", "seg2"]:
                await session.send_video(fixture(f"segments/{name}.webm"))
        await session.request_close()
        events, refused = await collect(session)
    check_realtime_run(events, refused, session)


@test()
async def realtime_session_hears_its_words_as_transcript_generated() -> None:
    # Issue 29: the server transcribes a realtime session's audio. A real telephone call
    # (tests/fixtures/real: two women, 30 s) sent as a browser would, one continuous WebM,
    # with instructions and no client transcript: every `transcript.generated` parses into
    # the client's typed event, the words are the call's, in session time, the last ones
    # before `session.ended`, and the recommendations are written from the server's words.
    async with client().realtime() as session:
        await ready(session)
        await session.update_config(
            realtime_recommendation_instructions=INSTRUCTIONS,
            realtime_recommendation_frequency=RealtimeRecommendationFrequency.HIGH,
        )
        await next_of(session, RealtimeSessionUpdatedEvent)
        media = fixture("real/sample_vp8_opus.webm")
        for at in range(0, len(media), 32 * 1024):
            await session.send_video(media[at : at + 32 * 1024])
        await session.request_close()
        events, refused = await collect(session)
    check_clean_end(events, refused, session)
    unknown = {e.type for e in of(events, UnknownEvent)}
    check(unknown <= {"engagement.updated"}, f"unexpected unknown events {unknown}")
    said = [e.data for e in of(events, TranscriptGeneratedEvent)]
    check(len(said) >= 3, f"{[type_name(e) for e in events]}")
    for segment in said:
        check(isinstance(segment, TranscriptSegment), f"{segment!r}")
        check(0.0 <= segment.start <= segment.end <= 30.5, f"{segment}")
        check(isinstance(segment.speaker, int) and 0 <= segment.speaker <= 8, f"{segment}")
        check(segment.text.strip() != "", f"{segment}")
    text = " ".join(s.text for s in said)
    for words in ["Diane", "New Jersey", "Chicago", "Yankee"]:
        check(words in text, f"{words!r} not in {text!r}")
    # "This is Diane in New Jersey." is said at 12.54-14.18 s, by the first voice heard.
    diane = next(s for s in said if "Diane" in s.text)
    check(diane.start < 14.18 and diane.end > 12.54, f"{diane}")
    check(diane.speaker == 1, f"{diane}")
    names = [type_name(e) for e in events]
    last_words = max(i for i, e in enumerate(events) if isinstance(e, TranscriptGeneratedEvent))
    check(last_words < len(events) - 1, f"{names}")
    check(said[-1].end >= 29.0, f"the call's last words are missing: {said[-1]}")
    check(
        len(of(events, RealtimeRecommendationGeneratedEvent)) >= 1,
        f"no recommendation from the server's transcript: {names}",
    )


# ---------------------------------------------------------------------------------------------


def main() -> int:
    only = {name for name in os.environ.get("ONLY", "").split(",") if name}
    unknown = only - {name for name, _, _ in TESTS}
    if unknown:
        print(f"ONLY names unknown tests: {sorted(unknown)}")
        return 2
    print(f"interhumanai {__version__} (header {SDK_HEADER_NAME}) against {BASE_URL}")
    passed, failed = 0, []
    for name, fn, defect in TESTS:
        if only and name not in only:
            continue
        started = time.monotonic()
        try:
            asyncio.run(asyncio.wait_for(fn(), TEST_TIMEOUT))
        except (
            BaseException
        ) as error:  # noqa: BLE001 - every failure is reported, none stops the run
            if isinstance(error, KeyboardInterrupt):
                raise
            tag = f" [issue 11 defect {defect}]" if defect else ""
            failed.append(name)
            print(f"FAIL {name}{tag} ({time.monotonic() - started:.1f} s)")
            detail = "".join(traceback.format_exception(error)).rstrip()
            print("    " + detail.replace("\n", "\n    "))
        else:
            passed += 1
            print(f"ok   {name} ({time.monotonic() - started:.1f} s)")
    print(f"{passed} passed, {len(failed)} failed")
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
