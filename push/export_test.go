package push

// PublicOnly is the dial-time check, for the tests.
var PublicOnly = publicOnly
