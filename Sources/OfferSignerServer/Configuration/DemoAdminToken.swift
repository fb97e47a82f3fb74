extension ServiceConfiguration {
    /// The admin token of `serve --demo` when `OFFER_SIGNER_ADMIN_TOKENS` is not set (named
    /// `demo`): public, like everything in the demo, which keeps made-up data in memory and listens on 127.0.0.1.
    /// The console's overview warns whenever a service accepts it.
    public static let demoAdminToken = "demo-admin-token"
}
