import Foundation

/// App Store Server Notifications V2 as their endpoint sees them (`POST /v1/notifications/appstore`): one
/// `signedPayload`, bounded, verified and folded in once (``NotificationIngestor``).
public struct NotificationIngestion: Sendable {
    /// The longest `signedPayload` taken (Apple's are a few kilobytes: a JWS with its certificate chain).
    public static let maximumPayloadLength = 64 * 1024

    let ingest: @Sendable (String) async throws(OfferServiceError) -> IngestOutcome

    /// Ingestion through `ingestor`.
    public init(ingestor: NotificationIngestor) {
        self.ingest = { payload async throws(OfferServiceError) in try await ingestor.ingest(signedPayload: payload) }
    }

    /// Ingestion through `ingest` (tests: what the ingestor would say).
    public init(ingest: @escaping @Sendable (String) async throws(OfferServiceError) -> IngestOutcome) {
        self.ingest = ingest
    }

    /// Verifies one notification's `signedPayload` and folds it in, once.
    /// - Returns: what became of it: `processed`, `duplicate` (already filed), `stale`, `ignored`.
    /// - Throws: ``OfferServiceError`` 400 `invalid_request` (field `signedPayload`) for a payload over
    ///   ``maximumPayloadLength`` bytes (never verified), `invalid_signed_payload` (nothing changed), 503
    ///   `store_unavailable` (the App Store retries).
    public func receive(signedPayload: String) async throws(OfferServiceError) -> IngestOutcome {
        guard signedPayload.utf8.count <= Self.maximumPayloadLength else {
            throw OfferServiceError.invalidRequest(field: "signedPayload", "signedPayload is longer than 64 KiB.")
        }
        return try await ingest(signedPayload)
    }

    /// Replays captured notifications: one `signedPayload` per line, bare or as `{"signedPayload": …}`.
    /// Each line is verified and applied once, like a live delivery; blank lines are skipped.
    public func replay(_ text: String) async -> ReplaySummary {
        var summary = ReplaySummary()
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !line.isEmpty else { continue }
            var payload = line
            if line.hasPrefix("{") {
                struct Body: Decodable { var signedPayload: String }
                guard let body = try? JSONDecoder().decode(Body.self, from: Data(line.utf8)) else {
                    summary.refused += 1
                    summary.problems.append("line \(number + 1): not a signedPayload or {\"signedPayload\": …}")
                    continue
                }
                payload = body.signedPayload
            }
            do {
                summary.add(try await receive(signedPayload: payload))
            } catch {
                summary.add(error, at: "line \(number + 1)")
            }
        }
        return summary
    }
}
