"""The object and fixture library and the scene arenas, built from MuJoCo primitives."""
