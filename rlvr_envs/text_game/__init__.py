"""Text-game state prediction: ByteSized32 loader, the state-difference verifier, the
MiniTextWorld simulator and the tasks built on them."""
