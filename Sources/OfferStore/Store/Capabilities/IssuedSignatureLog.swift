import OfferModel

/// The log of issued signatures: the group commit that records them, and the queries that read them back.
public protocol IssuedSignatureLog: Sendable {
    /// Records an issued signature; `completion` is called once the record is durable (or has failed), on a thread
    /// of the store's — the one way to record (``record(_:)`` awaits it). Concurrent records share one transaction
    /// and one flush (group commit). With `startWhenReady`, a record that would start a batch alone hands the
    /// batch's start to it, to run once the caller has recorded what else it has at hand (an event loop: at the end
    /// of its current tick), so those records share the batch.
    /// - `completion` gets ``OfferStoreError`` `duplicateNonce` when the nonce was recorded before.
    func record(_ signature: IssuedSignature, startWhenReady: StartWhenReady?, completion: @escaping @Sendable (Result<Void, any Error>) -> Void)

    /// Issued signatures, newest first.
    func issuedSignatures(matching query: IssuedSignatureQuery) async throws -> [IssuedSignature]

    /// How many issued signatures match (the query's `limit` is ignored).
    func countIssuedSignatures(matching query: IssuedSignatureQuery) async throws -> Int
}

/// Runs its argument once its caller has recorded what it has at hand (``IssuedSignatureLog/record(_:startWhenReady:completion:)``).
public typealias StartWhenReady = @Sendable (_ start: @escaping @Sendable () -> Void) -> Void

extension IssuedSignatureLog {
    /// Records an issued signature and returns once the record is durable (``record(_:startWhenReady:completion:)``).
    /// - Throws: ``OfferStoreError`` `duplicateNonce` when the nonce was recorded before.
    public func record(_ signature: IssuedSignature) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            record(signature, startWhenReady: nil) { continuation.resume(with: $0) }
        }
    }
}
