"""xetile_dsl.codegen"""
