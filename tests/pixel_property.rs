//! The pixel-wise lowering over generated cases (the harness generator's proptest strategy):
//! every case it compiles agrees with the oracle, and with the channel-wise lowering (an
//! N-version check of both finds nothing); it declines only what the channel-wise lowering
//! declines too, for the same reason.

use pimdiff::check::n_version::LoweringChoice;
use pimdiff::check::{check_case, Outcome, RunConfig};
use pimdiff::targets::tensor::generate::{case_strategy, GenConfig};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    #[test]
    fn pixel_wise_programs_agree_with_the_oracle_and_the_channel_wise_ones(
        case in case_strategy(GenConfig::default())
    ) {
        let pixel = RunConfig::default().with_lowering(LoweringChoice::Pixel, None);
        let alone = check_case(&case, &pixel);
        prop_assert!(
            matches!(alone.outcome, Outcome::Pass | Outcome::Unsupported { .. }),
            "pixel: {}", alone.outcome.summary()
        );
        let both = RunConfig::default().with_lowering(LoweringChoice::Both, None);
        let r = check_case(&case, &both);
        prop_assert!(r.attribution.is_none(), "{:?}", r.attribution);
        prop_assert!(
            matches!(r.outcome, Outcome::Pass | Outcome::Unsupported { .. }),
            "both: {}", r.outcome.summary()
        );
        let channel = check_case(&case, &RunConfig::default());
        prop_assert_eq!(
            matches!(channel.outcome, Outcome::Unsupported { .. }),
            matches!(alone.outcome, Outcome::Unsupported { .. }),
            "channel: {}, pixel: {}", channel.outcome.summary(), alone.outcome.summary()
        );
    }
}
