print("writer")
