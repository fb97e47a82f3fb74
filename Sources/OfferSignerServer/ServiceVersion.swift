/// The release of OfferSigner: printed by `offer-signer --version`, logged at start and stop, shown on the
/// console's overview.
public enum ServiceVersion {
    /// The release, as `major.minor.patch`.
    public static let current = "0.9.0"
}
