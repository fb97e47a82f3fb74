/// Runs a store operation, mapping its failure to `store_unavailable` (503 at the edge); the pipeline's own
/// errors pass through.
package func storeCall<T>(_ body: () async throws -> T) async throws(OfferServiceError) -> T {
    do {
        return try await body()
    } catch let error as OfferServiceError {
        throw error
    } catch {
        throw OfferServiceError.storeUnavailable
    }
}
