import Foundation
public import X509

/// Verifies and decodes data signed by the App Store: Server Notifications V2, signed transactions (StoreKit 2's
/// `jwsRepresentation`) and signed renewal info.
///
/// Checks what Apple's `SignedDataVerifier` checks: `alg` ES256; exactly three certificates in `x5c`; a chain from the
/// leaf through the intermediate to a *configured* root (the third `x5c` certificate is never trusted by itself: it
/// must be that root); Apple's marker extensions on the leaf (1.2.840.113635.100.6.11.1) and the intermediate
/// (1.2.840.113635.100.6.2.1); every certificate valid at the payload's `signedDate` (not now: App Store data
/// stays verifiable after its certificates expire); the leaf's signature over the JWS. Then the payload's `bundleIdentifier`,
/// `environment` and, for Production notifications, `appAppleId` must match the configuration.
///
/// Unlike Apple's library, data from ``AppStoreEnvironment/xcode`` and ``AppStoreEnvironment/localTesting`` is not
/// exempt from signature checks: accept those environments only together with the root that signed them.
///
/// Every failure is a ``SignedDataVerificationError``; compare its ``SignedDataVerificationError/code``.
///
/// ## Usage
///
/// ```swift
/// import AppStoreNotifications
///
/// // At start-up: trusts the bundled Apple Root CA - G3, accepts Production only.
/// let verifier = try SignedDataVerifier(bundleIdentifier: "com.example.app", appAppleId: 1234567890)
///
/// // POST /v1/notifications/appstore with {"signedPayload": "..."}:
/// do {
///     let decoded = try await verifier.verifyAndDecodeNotificationContents(body.signedPayload)
///     if decoded.notification.notificationType == .didChangeRenewalStatus,
///        decoded.notification.subtype == .autoRenewDisabled,
///        let transaction = decoded.transaction {
///         // record "auto-renew off" for transaction.originalTransactionId / transaction.appAccountToken
///     }
/// } catch {
///     // error.code, e.g. .untrustedRoot or .wrongBundleId: answer 400
/// }
///
/// // Tests and staging: trust a test root, accept the sandbox.
/// let testVerifier = try SignedDataVerifier(
///     bundleIdentifier: "com.example.app", environments: [.sandbox], trustedRoots: [testChain.root])
/// ```
public struct SignedDataVerifier: Sendable {
    /// The bundle identifier signed data must carry.
    public let bundleIdentifier: String

    /// The app's Apple ID that Production notifications must carry (`nil` when Production is not accepted).
    public let appAppleId: Int64?

    /// The environments accepted; data from any other is refused with ``SignedDataVerificationError/Code/wrongEnvironment``.
    public let environments: Set<AppStoreEnvironment>

    /// The trusted root certificates.
    public let trustedRoots: [Certificate]

    private let chainVerifier: SignedDataChainVerifier

    /// How many JWS headers (and the chains they carry) are remembered as verified (tests).
    var rememberedHeaders: Int { chainVerifier.rememberedHeaders }

    /// Creates a verifier for one app.
    ///
    /// - Parameters:
    ///   - bundleIdentifier: The app's bundle identifier.
    ///   - appAppleId: The app's Apple ID (App Store Connect → App Information → Apple ID); required when
    ///     `environments` contains ``AppStoreEnvironment/production``.
    ///   - environments: The environments accepted; default Production only (`OFFER_SIGNER_ENVIRONMENTS`).
    ///   - trustedRoots: The roots chains must end at; `nil` (the default) trusts the bundled Apple Root CA - G3 only
    ///     (`OFFER_SIGNER_TRUSTED_ROOTS`, see ``TrustedRootCertificates/certificate(pemOrDER:)``).
    /// - Throws: ``SignedDataVerificationError/Code/invalidConfiguration`` if `trustedRoots` or `environments` is
    ///   empty, or Production is accepted without `appAppleId`.
    public init(
        bundleIdentifier: String,
        appAppleId: Int64? = nil,
        environments: Set<AppStoreEnvironment> = [.production],
        trustedRoots: [Certificate]? = nil
    ) throws(SignedDataVerificationError) {
        let roots: [Certificate]
        if let trustedRoots {
            roots = trustedRoots
        } else {
            roots = [try TrustedRootCertificates.appleRootCAG3()]
        }
        guard !roots.isEmpty else {
            throw SignedDataVerificationError(.invalidConfiguration, "no trusted root certificate configured")
        }
        guard !environments.isEmpty else {
            throw SignedDataVerificationError(.invalidConfiguration, "no App Store environment accepted")
        }
        guard !environments.contains(.production) || appAppleId != nil else {
            throw SignedDataVerificationError(
                .invalidConfiguration,
                "accepting Production needs the app's appAppleId (bundle \(bundleIdentifier))"
            )
        }
        self.bundleIdentifier = bundleIdentifier
        self.appAppleId = appAppleId
        self.environments = environments
        self.trustedRoots = roots
        self.chainVerifier = SignedDataChainVerifier(trustedRoots: roots)
    }

    /// Verifies and decodes the `signedPayload` of an App Store Server Notification V2.
    ///
    /// The app is identified from `data`, or from `summary` or `externalPurchaseToken` for those notifications (TEST
    /// notifications carry `data` too). The nested `signedTransactionInfo` and `signedRenewalInfo` are left as they
    /// are: use ``verifyAndDecodeNotificationContents(_:)`` to verify them as well.
    ///
    /// - Parameter signedPayload: The `signedPayload` field of the request body.
    /// - Returns: The decoded notification.
    /// - Throws: ``SignedDataVerificationError`` if the signature, chain, bundle ID, environment or (Production)
    ///   app Apple ID does not check out.
    public func verifyAndDecodeNotification(
        _ signedPayload: String
    ) async throws(SignedDataVerificationError) -> ResponseBodyV2DecodedPayload {
        let notification = try await chainVerifier.verify(signedPayload, as: ResponseBodyV2DecodedPayload.self)
        let app = AppIdentity(of: notification)
        try check(bundleIdentifier: app.bundleIdentifier, environment: app.environment)
        if app.environment == .production, app.appAppleId != appAppleId {
            throw SignedDataVerificationError(
                .wrongAppAppleId,
                "appAppleId \(app.appAppleId.map(String.init) ?? "none") is not the configured \(appAppleId.map(String.init) ?? "none")"
            )
        }
        return notification
    }

    /// Verifies and decodes a notification and, with the same checks, its `signedTransactionInfo` and
    /// `signedRenewalInfo`.
    ///
    /// - Parameter signedPayload: The `signedPayload` field of the request body.
    /// - Returns: The notification with its verified nested payloads (`nil` where the notification has none).
    /// - Throws: ``SignedDataVerificationError`` from whichever of the three is refused.
    /// The nested payloads must be of the notification's own environment (a Sandbox notification cannot carry a
    /// Production transaction). With `signedNoLaterThan`, the notification and its nested payloads must be signed no
    /// later than that time (now plus the clock skew the caller allows): a payload dated ahead would otherwise win
    /// every later ordering comparison and freeze the customer's state.
    public func verifyAndDecodeNotificationContents(
        _ signedPayload: String,
        signedNoLaterThan latest: Date? = nil
    ) async throws(SignedDataVerificationError) -> DecodedNotification {
        let notification = try await verifyAndDecodeNotification(signedPayload)
        var decoded = DecodedNotification(notification: notification)
        let environment = AppIdentity(of: notification).environment
        if let signedTransaction = notification.data?.signedTransactionInfo {
            let transaction = try await verifyAndDecodeTransaction(signedTransaction)
            guard transaction.environment == environment else {
                throw SignedDataVerificationError(
                    .wrongEnvironment,
                    """
                    the nested transaction's environment (\(transaction.environment?.rawValue ?? "none")) is not the notification's \
                    (\(environment?.rawValue ?? "none"))
                    """
                )
            }
            decoded.transaction = transaction
        }
        if let signedRenewalInfo = notification.data?.signedRenewalInfo {
            let renewalInfo = try await verifyAndDecodeRenewalInfo(signedRenewalInfo)
            guard renewalInfo.environment == environment else {
                throw SignedDataVerificationError(
                    .wrongEnvironment,
                    """
                    the nested renewal info's environment (\(renewalInfo.environment?.rawValue ?? "none")) is not the notification's \
                    (\(environment?.rawValue ?? "none"))
                    """
                )
            }
            decoded.renewalInfo = renewalInfo
        }
        if let latest {
            let bound = latest.appStoreMilliseconds
            for (name, date) in [
                ("notification", notification.signedDate), ("transaction", decoded.transaction?.signedDate),
                ("renewal info", decoded.renewalInfo?.signedDate),
            ] {
                if let date, date > bound {
                    throw SignedDataVerificationError(
                        .notFresh,
                        """
                        the \(name)'s signedDate is later than now plus the allowed clock skew; it is refused so that it cannot hide later \
                        notifications (the App Store retries)
                        """
                    )
                }
            }
        }
        return decoded
    }

    /// Verifies and decodes a signed transaction: a notification's `signedTransactionInfo`, or StoreKit 2's
    /// `Transaction.jwsRepresentation` sent by an app.
    ///
    /// - Parameter signedTransaction: The compact JWS.
    /// - Returns: The decoded transaction.
    /// - Throws: ``SignedDataVerificationError`` if the signature, chain, bundle ID or environment does not check out.
    public func verifyAndDecodeTransaction(
        _ signedTransaction: String
    ) async throws(SignedDataVerificationError) -> JWSTransactionDecodedPayload {
        let transaction = try await chainVerifier.verify(signedTransaction, as: JWSTransactionDecodedPayload.self)
        try check(bundleIdentifier: transaction.bundleIdentifier, environment: transaction.environment)
        for (name, identifier) in [("originalTransactionId", transaction.originalTransactionId), ("transactionId", transaction.transactionId)] {
            if let identifier, !Self.isTransactionIdentifier(identifier) {
                throw SignedDataVerificationError(.malformedPayload, "\(name) is not 1 to 64 decimal digits")
            }
        }
        return transaction
    }

    /// Verifies and decodes signed renewal info: a notification's `signedRenewalInfo`, or StoreKit 2's
    /// `RenewalInfo.jwsRepresentation`.
    ///
    /// Renewal info has no `bundleIdentifier` field, so only its environment is checked (as in Apple's library).
    ///
    /// - Parameter signedRenewalInfo: The compact JWS.
    /// - Returns: The decoded renewal info.
    /// - Throws: ``SignedDataVerificationError`` if the signature, chain or environment does not check out.
    public func verifyAndDecodeRenewalInfo(
        _ signedRenewalInfo: String
    ) async throws(SignedDataVerificationError) -> JWSRenewalInfoDecodedPayload {
        let renewalInfo = try await chainVerifier.verify(signedRenewalInfo, as: JWSRenewalInfoDecodedPayload.self)
        try check(environment: renewalInfo.environment)
        return renewalInfo
    }

    /// Verifies and decodes the `signedPayload` of a Retention Messaging real-time request.
    ///
    /// The request carries no bundle identifier: it must carry this verifier's `appAppleId` (in every environment,
    /// so a verifier without one refuses every request), an accepted environment, and every field Apple documents.
    ///
    /// - Parameter signedPayload: The `signedPayload` field of the request body.
    /// - Returns: The decoded request.
    /// - Throws: ``SignedDataVerificationError``: the chain or signature (as for notifications),
    ///   ``SignedDataVerificationError/Code/wrongAppAppleId``, ``SignedDataVerificationError/Code/wrongEnvironment``,
    ///   ``SignedDataVerificationError/Code/malformedPayload`` for a missing or malformed field.
    /// With `freshness`, the request must be fresh: signed within `freshness.skew` of `freshness.now` (either way),
    /// by a chain whose certificates are all valid at `freshness.now` as well as at `signedDate`. A live endpoint
    /// passes it, so a request captured in a proxy or a log cannot be answered again once the window has passed;
    /// explaining a captured request leaves it out.
    public func verifyAndDecodeRealtimeRequest(
        _ signedPayload: String,
        freshness: Freshness? = nil
    ) async throws(SignedDataVerificationError) -> DecodedRealtimeRequestBody {
        let request = try await chainVerifier.verify(signedPayload, as: DecodedRealtimeRequestBody.self, alsoValidAt: freshness?.now)
        guard let requestAppAppleId = request.appAppleId, let appAppleId, requestAppAppleId == appAppleId else {
            throw SignedDataVerificationError(
                .wrongAppAppleId,
                """
                appAppleId \(request.appAppleId.map(String.init) ?? "none") is not the configured \
                \(appAppleId.map(String.init) ?? "none (set the app's appAppleId)")
                """
            )
        }
        try check(environment: request.environment)
        guard let original = request.originalTransactionId, Self.isTransactionIdentifier(original) else {
            throw SignedDataVerificationError(.malformedPayload, "originalTransactionId is missing or not 1 to 64 decimal digits")
        }
        guard let product = request.productIdentifier, !product.isEmpty, product.utf8.count <= 255 else {
            throw SignedDataVerificationError(.malformedPayload, "productId is missing or longer than 255 bytes")
        }
        guard let identifier = request.requestIdentifier, identifier.utf8.count == 36, UUID(uuidString: identifier) != nil else {
            throw SignedDataVerificationError(.malformedPayload, "requestIdentifier is missing or not a UUID")
        }
        guard request.userLocale.map(Self.isLocale) ?? true else {
            throw SignedDataVerificationError(
                .malformedPayload,
                "userLocale is not a locale tag such as en-US (letters and digits in subtags of 1 to 8, separated by - or _, at most 35 bytes)"
            )
        }
        if let freshness {
            guard let signedDate = request.signedDate else {
                throw SignedDataVerificationError(.notFresh, "signedDate is missing; a real-time request must say when it was signed")
            }
            let now = freshness.now.appStoreMilliseconds
            let skew = Int64(freshness.skew * 1000)
            guard signedDate >= now - skew, signedDate <= now + skew else {
                throw SignedDataVerificationError(
                    .notFresh,
                    """
                    signedDate is \(signedDate < now ? "older" : "later") than the \(Int(freshness.skew)) seconds around now a real-time \
                    request may be; a captured request is not answered again
                    """
                )
            }
        }
        return request
    }

    /// The window a real-time request must be signed in: `skew` seconds either side of `now`.
    public struct Freshness: Sendable, Hashable {
        /// The time the request is judged at.
        public var now: Date
        /// How far its `signedDate` may be from `now`, in seconds, either way.
        public var skew: TimeInterval

        /// Creates a window.
        public init(now: Date, skew: TimeInterval) {
            self.now = now
            self.skew = skew
        }
    }

    /// An App Store transaction identifier: 1 to 64 ASCII decimal digits.
    static func isTransactionIdentifier(_ text: String) -> Bool {
        let bytes = text.utf8
        return (1...64).contains(bytes.count) && bytes.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// A locale tag as the App Store sends one (`en-US`, `zh-Hant-TW`, `en_GB`): BCP 47's shape, subtags of 1 to 8
    /// ASCII letters or digits separated by `-` or `_`, the first of 2 to 3 letters, at most 35 bytes in all.
    static func isLocale(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (2...35).contains(bytes.count) else { return false }
        let subtags = bytes.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
            .flatMap { $0.split(separator: UInt8(ascii: "_"), omittingEmptySubsequences: false) }
        guard let first = subtags.first, (2...3).contains(first.count),
            first.allSatisfy({ (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0 | 0x20) })
        else { return false }
        return subtags.allSatisfy { subtag in
            (1...8).contains(subtag.count)
                && subtag.allSatisfy { byte in
                    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
                }
        }
    }

    private func check(bundleIdentifier: String?, environment: AppStoreEnvironment?) throws(SignedDataVerificationError) {
        guard bundleIdentifier == self.bundleIdentifier else {
            throw SignedDataVerificationError(
                .wrongBundleId,
                "bundleId \(bundleIdentifier.map { "\"\($0)\"" } ?? "none") is not \"\(self.bundleIdentifier)\""
            )
        }
        try check(environment: environment)
    }

    private func check(environment: AppStoreEnvironment?) throws(SignedDataVerificationError) {
        guard let environment, environments.contains(environment) else {
            let accepted = environments.map(\.rawValue).sorted().joined(separator: ", ")
            throw SignedDataVerificationError(
                .wrongEnvironment,
                "environment \(environment?.rawValue ?? "none") is not accepted (\(accepted))"
            )
        }
    }
}
