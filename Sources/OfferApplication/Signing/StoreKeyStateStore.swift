import Foundation
import OfferKeys
import OfferModel
import OfferStore

/// Keeps key states in the customer store, shared by every replica that uses it (the default when a store is
/// configured and `OFFER_SIGNER_STATE_FILE` is not set). Replicas pick up each other's changes: see
/// ``KeyStateRefresher``.
public struct StoreKeyStateStore: KeyStateStore {
    /// The document the service keeps its key states in.
    public static let defaultDocumentName = "key-states"
    let store: any OfferStore
    let documentName: String

    /// - Parameters:
    ///   - store: the shared store.
    ///   - documentName: the document (tests use their own).
    public init(store: any OfferStore, documentName: String = StoreKeyStateStore.defaultDocumentName) {
        self.store = store
        self.documentName = documentName
    }

    public func load() async throws -> KeyStates {
        guard let document = try await store.document(named: documentName) else { return KeyStates() }
        guard let states = try? KeyStates.decode(Data(document.text.utf8)) else {
            throw KeyManagementError(
                .invalidKeyStates,
                "The key states in the store cannot be read; restore them or delete the '\(documentName)' document."
            )
        }
        return states
    }

    public func save(_ states: KeyStates) async throws -> Bool {
        let text = String(decoding: try states.encoded(), as: UTF8.self)
        return try await store.replaceDocument(named: documentName, version: Int64(states.version), text: text)
    }
}
