"""Selection: the compiler, its catalog view, the Datalog adapter, retrieval, tiers, rendering and token counting."""
