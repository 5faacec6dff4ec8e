//! The PostgreSQL store's schema, as versioned migration steps.

/// Schema steps in order; `attune_schema.version` records how many were
/// applied. Never edit a step that has shipped: append a new one. Times are
/// Unix seconds for accounts and keys and Unix milliseconds for tokens and
/// jobs, as in the embedded store.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: everything the embedded store has after its step 2, plus instance
    // leases and the owner of each job.
    "CREATE TABLE accounts (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        subscription_active BOOLEAN NOT NULL,
        requests_per_minute BIGINT NOT NULL,
        concurrent_requests BIGINT NOT NULL,
        analysis_quota_seconds BIGINT NOT NULL,
        daily_quota_seconds BIGINT NOT NULL,
        analysis_seconds_used DOUBLE PRECISION NOT NULL DEFAULT 0,
        created_at BIGINT NOT NULL
    );
    CREATE TABLE api_keys (
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        id TEXT PRIMARY KEY,
        account_id BIGINT NOT NULL REFERENCES accounts(id),
        display_prefix TEXT NOT NULL,
        key_hash BYTEA NOT NULL UNIQUE,
        scopes TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
        created_at BIGINT NOT NULL,
        revoked_at BIGINT
    );
    CREATE TABLE daily_usage (
        account_id BIGINT NOT NULL REFERENCES accounts(id),
        day TEXT NOT NULL,
        seconds DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (account_id, day)
    );
    CREATE TABLE client_tokens (
        id TEXT PRIMARY KEY,
        token_hash BYTEA NOT NULL UNIQUE,
        account_id BIGINT NOT NULL REFERENCES accounts(id),
        key_id TEXT NOT NULL REFERENCES api_keys(id),
        scopes TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        revoked_at BIGINT,
        max_duration_seconds BIGINT,
        max_bytes BIGINT,
        max_concurrent BIGINT NOT NULL,
        max_video_seconds DOUBLE PRECISION,
        allowed_origins TEXT,
        video_seconds_used DOUBLE PRECISION NOT NULL DEFAULT 0
    );
    CREATE TABLE instances (
        id TEXT PRIMARY KEY,
        started_at BIGINT NOT NULL,
        lease_expires_at BIGINT NOT NULL
    );
    CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        account_id BIGINT NOT NULL REFERENCES accounts(id),
        model TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
        correlation_id TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        result TEXT,
        error_code TEXT,
        error_message TEXT,
        billed_seconds DOUBLE PRECISION NOT NULL,
        billed_day TEXT NOT NULL,
        token_id TEXT,
        instance_id TEXT
    );
    CREATE INDEX jobs_unfinished ON jobs(instance_id) WHERE status IN ('queued', 'running');
    CREATE INDEX jobs_expires_at ON jobs(expires_at);",
    // 2: the shared job queue. A queued job's upload waits here for whichever
    // instance claims it, and is deleted when claimed or when the job ends
    // otherwise. Stored out of line and uncompressed: media is compressed
    // already, so trying again only costs CPU.
    "CREATE TABLE job_media (
        job_id TEXT PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
        bytes BYTEA NOT NULL,
        file_name TEXT,
        content_type TEXT,
        include TEXT NOT NULL,
        duration_seconds DOUBLE PRECISION NOT NULL
    );
    ALTER TABLE job_media ALTER COLUMN bytes SET STORAGE EXTERNAL;
    CREATE INDEX jobs_queued ON jobs(created_at, id) WHERE status = 'queued';",
    // 3: request limits for the whole deployment (see `postgres_limits`).
    // `limit_holds` counts, per subject (an account's requests in flight, a
    // client token's open sessions) and per instance, the places held: they
    // count while that instance's lease is live, so a killed instance's
    // places free themselves. One row per subject and instance, updated in
    // place (no index on `held`, so updates stay HOT and the table small).
    // `limit_rates` holds each account's GCRA arrival time.
    "CREATE TABLE limit_holds (
        subject TEXT NOT NULL,
        instance_id TEXT NOT NULL,
        held BIGINT NOT NULL,
        PRIMARY KEY (subject, instance_id)
    );
    CREATE TABLE limit_rates (
        subject TEXT PRIMARY KEY,
        next_arrival_ms BIGINT NOT NULL
    );
    CREATE FUNCTION attune_take_slot(
        p_subject TEXT, p_instance TEXT, p_now BIGINT, p_lease_now BIGINT, p_max BIGINT,
        p_interval BIGINT, p_tolerance BIGINT,
        OUT taken BOOLEAN, OUT in_use BIGINT, OUT wait_ms BIGINT
    ) LANGUAGE plpgsql AS $$
    DECLARE
        arrival BIGINT;
    BEGIN
        taken := false;
        -- One admission per subject at a time, deployment-wide; each
        -- statement below then sees every earlier admission (READ COMMITTED
        -- takes a fresh snapshot per statement).
        PERFORM pg_advisory_xact_lock(hashtextextended(p_subject, 0));
        SELECT COALESCE(sum(h.held), 0) INTO in_use FROM limit_holds h
            JOIN instances i ON i.id = h.instance_id
            WHERE h.subject = p_subject AND i.lease_expires_at > p_lease_now;
        IF p_max > 0 AND in_use >= p_max THEN
            RETURN;
        END IF;
        IF p_interval > 0 THEN
            SELECT GREATEST(next_arrival_ms, p_now) INTO arrival
                FROM limit_rates WHERE subject = p_subject;
            arrival := COALESCE(arrival, p_now);
            IF arrival - p_tolerance > p_now THEN
                wait_ms := arrival - p_tolerance - p_now;
                RETURN;
            END IF;
            INSERT INTO limit_rates (subject, next_arrival_ms) VALUES (p_subject, arrival + p_interval)
                ON CONFLICT (subject) DO UPDATE SET next_arrival_ms = excluded.next_arrival_ms;
        END IF;
        INSERT INTO limit_holds (subject, instance_id, held) VALUES (p_subject, p_instance, 1)
            ON CONFLICT (subject, instance_id) DO UPDATE SET held = limit_holds.held + 1;
        taken := true;
    END $$;",
    // 4: an account's request limits from per-instance grants (see
    // `postgres_limits`): `limit_holds.held` of an account is the places
    // granted to an instance; `attune_reserve` grants places and batches of
    // GCRA arrivals (after giving back expired ones if no one reserved
    // since), `attune_give_back` returns unused ones.
    "CREATE FUNCTION attune_reserve(
        p_subject TEXT, p_instance TEXT, p_now BIGINT, p_lease_now BIGINT, p_max BIGINT,
        p_places BIGINT, p_interval BIGINT, p_tolerance BIGINT, p_tokens BIGINT,
        p_back_ms BIGINT, p_back_tat BIGINT,
        OUT places BIGINT, OUT tokens BIGINT, OUT tat BIGINT, OUT in_use BIGINT,
        OUT wait_ms BIGINT
    ) LANGUAGE plpgsql AS $$
    DECLARE
        arrival BIGINT;
    BEGIN
        places := 0;
        tokens := 0;
        PERFORM pg_advisory_xact_lock(hashtextextended(p_subject, 0));
        IF p_back_ms > 0 THEN
            UPDATE limit_rates SET next_arrival_ms = next_arrival_ms - p_back_ms
                WHERE subject = p_subject AND next_arrival_ms = p_back_tat;
        END IF;
        IF p_places > 0 THEN
            SELECT COALESCE(sum(h.held), 0) INTO in_use FROM limit_holds h
                JOIN instances i ON i.id = h.instance_id
                WHERE h.subject = p_subject AND i.lease_expires_at > p_lease_now;
            IF in_use >= p_max THEN
                RETURN;
            END IF;
            places := LEAST(p_places, p_max - in_use);
        END IF;
        IF p_tokens > 0 THEN
            SELECT GREATEST(next_arrival_ms, p_now) INTO arrival
                FROM limit_rates WHERE subject = p_subject;
            arrival := COALESCE(arrival, p_now);
            IF arrival - p_tolerance > p_now THEN
                places := 0;
                wait_ms := arrival - p_tolerance - p_now;
                RETURN;
            END IF;
            tokens := LEAST(p_tokens, (p_now + p_tolerance - arrival) / p_interval + 1);
            tat := arrival + tokens * p_interval;
            INSERT INTO limit_rates (subject, next_arrival_ms) VALUES (p_subject, tat)
                ON CONFLICT (subject) DO UPDATE SET next_arrival_ms = excluded.next_arrival_ms;
        END IF;
        IF places > 0 THEN
            INSERT INTO limit_holds (subject, instance_id, held) VALUES (p_subject, p_instance, places)
                ON CONFLICT (subject, instance_id) DO UPDATE SET held = limit_holds.held + excluded.held;
        END IF;
    END $$;
    CREATE FUNCTION attune_give_back(
        p_subject TEXT, p_instance TEXT, p_places BIGINT, p_back_ms BIGINT, p_back_tat BIGINT
    ) RETURNS VOID LANGUAGE plpgsql AS $$
    BEGIN
        IF p_places > 0 THEN
            UPDATE limit_holds SET held = GREATEST(held - p_places, 0)
                WHERE subject = p_subject AND instance_id = p_instance;
        END IF;
        IF p_back_ms > 0 THEN
            UPDATE limit_rates SET next_arrival_ms = next_arrival_ms - p_back_ms
                WHERE subject = p_subject AND next_arrival_ms = p_back_tat;
        END IF;
    END $$;",
    // 5: the speaker turns a completed job's analysis read, for its HTML report
    // (`[[start, end, speaker], ...]`; NULL for jobs completed before).
    "ALTER TABLE jobs ADD COLUMN speaker_turns TEXT;",
];
