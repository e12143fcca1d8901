//! The parameters of the election (flags `--leader-election-*` of `kuberay-wasm operator`).

use std::time::Duration;

/// Where the Lease is, who this replica is, and the timings (client-go's names and meaning).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElection {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name.
    pub lease_name: String,
    /// This replica's identity, unique per process ([`super::unique_identity`]).
    pub identity: String,
    /// How long a candidate waits after it last saw the Lease change before taking it over.
    pub lease_duration: Duration,
    /// How long the leader keeps acting without a successful renewal; then it steps down.
    pub renew_deadline: Duration,
    /// How often a candidate tries to acquire and the leader renews.
    pub retry_period: Duration,
}

/// Timings that cannot work together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("the leader election's {0} must be longer than zero")]
    Zero(&'static str),
    #[error(
        "--leader-election-renew-deadline ({renew:?}) must be shorter than --leader-election-lease-duration ({lease:?})"
    )]
    RenewNotBeforeExpiry { renew: Duration, lease: Duration },
    #[error(
        "--leader-election-retry-period ({retry:?}) must be shorter than --leader-election-renew-deadline ({renew:?})"
    )]
    RetryNotBeforeDeadline { retry: Duration, renew: Duration },
    #[error("the leader election's {0} must not be empty")]
    Empty(&'static str),
}

impl LeaderElection {
    /// Checks that the leader steps down before a candidate may take over, and renews before it must.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (what, value) in [
            ("lease duration", self.lease_duration),
            ("renew deadline", self.renew_deadline),
            ("retry period", self.retry_period),
        ] {
            if value.is_zero() {
                return Err(ConfigError::Zero(what));
            }
        }
        for (what, value) in [
            ("namespace", &self.namespace),
            ("lease name", &self.lease_name),
            ("identity", &self.identity),
        ] {
            if value.is_empty() {
                return Err(ConfigError::Empty(what));
            }
        }
        if self.renew_deadline >= self.lease_duration {
            return Err(ConfigError::RenewNotBeforeExpiry {
                renew: self.renew_deadline,
                lease: self.lease_duration,
            });
        }
        if self.retry_period >= self.renew_deadline {
            return Err(ConfigError::RetryNotBeforeDeadline {
                retry: self.retry_period,
                renew: self.renew_deadline,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn election(lease: u64, renew: u64, retry: u64) -> LeaderElection {
        LeaderElection {
            namespace: "ns".into(),
            lease_name: "kuberay-wasm-leader".into(),
            identity: "me".into(),
            lease_duration: Duration::from_secs(lease),
            renew_deadline: Duration::from_secs(renew),
            retry_period: Duration::from_secs(retry),
        }
    }

    #[test]
    fn the_leader_must_give_up_before_others_take_over() {
        assert_eq!(election(15, 10, 2).validate(), Ok(()));
        assert!(matches!(
            election(10, 10, 2).validate(),
            Err(ConfigError::RenewNotBeforeExpiry { .. })
        ));
        assert!(matches!(
            election(15, 10, 10).validate(),
            Err(ConfigError::RetryNotBeforeDeadline { .. })
        ));
        assert_eq!(
            election(15, 10, 0).validate(),
            Err(ConfigError::Zero("retry period"))
        );
        let mut nameless = election(15, 10, 2);
        nameless.namespace.clear();
        assert_eq!(nameless.validate(), Err(ConfigError::Empty("namespace")));
    }
}
