"""Selection: the compiler, its catalog view, the Datalog adapter and the policy jit reads from it,
retrieval, tiers and the budget, rendering and token counting."""
