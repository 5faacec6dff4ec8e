//! RFC 3339 UTC date-times for envelopes and job records.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime, UtcOffset};

/// A UTC instant, written as RFC 3339 with millisecond precision and a `Z`
/// suffix (`2026-11-22T10:31:17.123Z`), the ISO 8601 form the interface asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(OffsetDateTime);

impl Timestamp {
    /// The current time. Callers that need injectable time pass a `Timestamp`
    /// they obtained from their own clock instead.
    pub fn now() -> Timestamp {
        Timestamp::from_datetime(OffsetDateTime::now_utc())
    }

    /// Wraps a date-time, converted to UTC and truncated to milliseconds so a
    /// value survives a round trip through its text form unchanged.
    pub fn from_datetime(at: OffsetDateTime) -> Timestamp {
        let utc = at.to_offset(UtcOffset::UTC);
        let millis = utc.millisecond();
        Timestamp(
            utc.replace_nanosecond(u32::from(millis) * 1_000_000)
                .unwrap_or(utc),
        )
    }

    /// Milliseconds since the Unix epoch.
    pub fn unix_millis(self) -> i64 {
        (self.0.unix_timestamp_nanos() / 1_000_000) as i64
    }

    /// The instant at a number of milliseconds since the Unix epoch, or `None`
    /// outside the representable range.
    pub fn from_unix_millis(millis: i64) -> Option<Timestamp> {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000)
            .ok()
            .map(Timestamp)
    }

    /// This instant moved by `seconds` (saturating at the representable range).
    pub fn plus_seconds(self, seconds: i64) -> Timestamp {
        Timestamp(self.0.saturating_add(Duration::seconds(seconds)))
    }

    /// The wrapped date-time (always UTC).
    pub fn datetime(self) -> OffsetDateTime {
        self.0
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            d.year(),
            u8::from(d.month()),
            d.day(),
            d.hour(),
            d.minute(),
            d.second(),
            d.millisecond()
        )
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        OffsetDateTime::parse(&text, &Rfc3339)
            .map(Timestamp::from_datetime)
            .map_err(|e| de::Error::custom(format_args!("invalid RFC 3339 date-time: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_utc_with_millis_and_z() {
        let t = Timestamp::from_unix_millis(1_795_430_000_123).unwrap();
        assert_eq!(t.to_string(), "2026-11-23T10:33:20.123Z");
        let json = serde_json::to_string(&t).unwrap();
        let back: Timestamp = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn reads_offsets_and_normalizes_to_utc() {
        let t: Timestamp = serde_json::from_str("\"2026-11-22T12:00:00+02:00\"").unwrap();
        assert_eq!(t.to_string(), "2026-11-22T10:00:00.000Z");
        assert!(serde_json::from_str::<Timestamp>("\"yesterday\"").is_err());
    }
}
