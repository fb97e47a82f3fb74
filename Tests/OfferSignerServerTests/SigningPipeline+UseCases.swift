import OfferApplication

/// The use cases over a test's pipeline, for tests that call the application without HTTP (as
/// ``OfferSignerUseCases`` builds them over the server's).
extension SigningPipeline {
    /// The signing flows over this pipeline.
    var signing: Signing { Signing(pipeline: self) }
    /// Verification with this pipeline's keys.
    var verification: OfferVerification { OfferVerification(keys: keys) }
    /// Retention answers through this pipeline, late after the default deadline.
    var retentionAnswers: RetentionAnswering { RetentionAnswering(pipeline: self) }
    /// The outcome reports over this pipeline's store and apps.
    var outcomes: OutcomeReporting { OfferSignerUseCases(pipeline: self, keyManager: nil).outcomes }
}
