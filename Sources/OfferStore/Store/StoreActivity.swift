import Foundation
import OfferModel

/// A store that can say when it last saw a signature and a notification, each read through its table's time index.
public protocol StoreActivityReporting: Sendable {
    /// The store's latest activity.
    /// - Throws: the store's error when it cannot be read.
    func latestActivity() async throws -> StoreActivity

    /// How many decisions the decision log wrote from `since` (included) to `until` (excluded), Unix ms, granted and
    /// refused: whole UTC days from their daily counts, a day cut by the range from the log. A day's counts outlive
    /// the purge of its decisions.
    /// - Throws: the store's error when it cannot be read.
    func decisionCounts(since: Int64, until: Int64) async throws -> (granted: Int, refused: Int)
}
